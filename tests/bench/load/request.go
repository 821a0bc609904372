// Package load is a lean closed-loop HTTP/1.1 load generator for the
// side-by-side benchmark: each connection writes pre-built request bytes and
// reads back only the status and the body, so on a 2-core machine the
// client's CPU cost stays small next to the servers' it measures.
package load

import (
	"strconv"
	"strings"
)

// Request is one HTTP request to build once and send many times.
type Request struct {
	Method string
	Path   string
	// Header lists name, value pairs in the order they are written.
	Header [][2]string
	// Body is sent with Content-Type: application/json when not nil.
	Body []byte
}

// Build returns the bytes of r on the wire to host, keep-alive.
func Build(host string, r Request) []byte {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte(' ')
	b.WriteString(r.Path)
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(host)
	b.WriteString("\r\n")
	for _, h := range r.Header {
		b.WriteString(h[0])
		b.WriteString(": ")
		b.WriteString(h[1])
		b.WriteString("\r\n")
	}
	// A POST without a body still states its length, so the server does
	// not wait for one that never comes.
	if r.Body != nil || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
		if r.Body != nil {
			b.WriteString("Content-Type: application/json\r\n")
		}
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(len(r.Body)))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	return []byte(b.String())
}
