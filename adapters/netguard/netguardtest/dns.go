// Package netguardtest gives tests of guarded adapters a DNS resolver they
// control, so a public-looking name can resolve to a refused address
// without touching real DNS.
package netguardtest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// FakeResolver returns a resolver whose DNS server answers A and AAAA
// queries from records (keyed by name without the trailing dot) and
// NXDOMAIN for any other name, so tests can make a public-looking name
// resolve to a forbidden address without touching real DNS.
func FakeResolver(t testing.TB, records map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed at the end of the test
			}
			if resp := answer(buf[:n], records); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", pc.LocalAddr().String())
		},
	}
}

func answer(query []byte, records map[string][]netip.Addr) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	addrs, known := records[strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	rrh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			if b.AResource(rrh, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil
			}
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			if b.AAAAResource(rrh, dnsmessage.AAAAResource{AAAA: a.As16()}) != nil {
				return nil
			}
		}
	}
	resp, err := b.Finish()
	if err != nil {
		return nil
	}
	return resp
}
