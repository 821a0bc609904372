package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// Conn is one keep-alive client connection that sends pre-built requests
// and reads their responses. It redials after the server closes it. A Conn
// is used by one goroutine at a time.
type Conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	body []byte
}

// NewConn returns a connection to addr (host:port), dialled on first use.
func NewConn(addr string) *Conn { return &Conn{addr: addr} }

// Dial opens the connection now, so a measured run does not pay for it.
func (c *Conn) Dial() error {
	if c.c != nil {
		return nil
	}
	nc, err := net.Dial("tcp", c.addr)
	if err != nil {
		return err
	}
	c.c = nc
	if c.r == nil {
		c.r = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.r.Reset(nc)
	}
	return nil
}

// Close closes the connection; the next Do dials again.
func (c *Conn) Close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
	}
}

// Do writes raw (a request Build returned) and reads the response. The
// body is valid until the next call.
func (c *Conn) Do(raw []byte) (status int, body []byte, err error) {
	if err := c.Dial(); err != nil {
		return 0, nil, err
	}
	if _, err := c.c.Write(raw); err != nil {
		c.Close()
		return 0, nil, err
	}
	status, body, keep, err := readResponse(c.r, c.body[:0])
	if body != nil {
		c.body = body
	}
	if err != nil || !keep {
		c.Close()
	}
	return status, body, err
}

var (
	headerContentLength    = []byte("content-length")
	headerTransferEncoding = []byte("transfer-encoding")
	headerConnection       = []byte("connection")
	valueChunked           = []byte("chunked")
	valueClose             = []byte("close")
)

// readResponse reads one HTTP/1.1 response from r, appending its body to
// buf. keep says whether the connection may carry another request.
func readResponse(r *bufio.Reader, buf []byte) (status int, body []byte, keep bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, fmt.Errorf("status line: %w", err)
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, false, fmt.Errorf("malformed status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, fmt.Errorf("malformed status line %q", line)
	}
	keep = line[7] == '1' // HTTP/1.0 closes unless it says otherwise; no server here speaks it
	length, chunked := -1, false
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return status, nil, false, fmt.Errorf("header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return status, nil, false, fmt.Errorf("malformed header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case equalFold(name, headerContentLength):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return status, nil, false, fmt.Errorf("malformed Content-Length %q", value)
			}
		case equalFold(name, headerTransferEncoding):
			chunked = equalFold(value, valueChunked)
		case equalFold(name, headerConnection):
			if equalFold(value, valueClose) {
				keep = false
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status < 200:
		return status, buf, keep, nil
	case chunked:
		body, err = readChunked(r, buf)
		return status, body, keep && err == nil, err
	case length >= 0:
		body = grow(buf, length)
		_, err = io.ReadFull(r, body[len(buf):])
		return status, body, keep && err == nil, err
	default:
		// Neither length nor chunks: the body runs to the end of the
		// connection.
		rest, err := io.ReadAll(r)
		return status, append(buf, rest...), false, err
	}
}

// readChunked reads a chunked body and its trailer.
func readChunked(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return buf, fmt.Errorf("chunk size: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 31)
		if err != nil {
			return buf, fmt.Errorf("malformed chunk size %q", line)
		}
		if size == 0 {
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return buf, fmt.Errorf("trailer: %w", err)
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return buf, nil
				}
			}
		}
		n := len(buf)
		buf = grow(buf, int(size))
		if _, err := io.ReadFull(r, buf[n:]); err != nil {
			return buf, err
		}
		var crlf [2]byte
		if _, err := io.ReadFull(r, crlf[:]); err != nil {
			return buf, err
		}
		if crlf != [2]byte{'\r', '\n'} {
			return buf, errors.New("chunk not followed by CRLF")
		}
	}
}

// grow extends buf by n bytes, reusing its capacity.
func grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) < n {
		bigger := make([]byte, len(buf), 2*cap(buf)+n)
		copy(bigger, buf)
		buf = bigger
	}
	return buf[:len(buf)+n]
}

// equalFold compares ASCII bytes case-insensitively without allocating.
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
