package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddrKey carries the client's address that TrustProxies found.
type clientAddrKey struct{}

// TrustProxies makes the client address of a request that comes from one
// of the trusted proxies the one its X-Forwarded-For names: read from the
// right, the first address that is not itself a trusted proxy (the
// leftmost when all are). From any other peer, or without trusted
// proxies, the header is ignored: a client could set it to pass as
// another and dodge the per-address throttles.
func TrustProxies(trusted []netip.Prefix) Middleware {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if addr, ok := forwardedClient(r, trusted); ok {
				r = r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, addr))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// forwardedClient is the client X-Forwarded-For names, when the peer is
// trusted and the header is a list of addresses.
func forwardedClient(r *http.Request, trusted []netip.Prefix) (string, bool) {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return "", false
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(peer.Unmap()) {
		return "", false
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	var client netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return "", false
		}
		client = a.Unmap()
		if !isTrusted(client) {
			break
		}
	}
	if !client.IsValid() {
		return "", false
	}
	return client.String(), true
}
