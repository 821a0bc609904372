package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// The client address is the peer's unless the peer is a trusted proxy;
// then X-Forwarded-For's rightmost address that is not a trusted proxy.
func TestTrustProxiesReadsForwardedOnlyFromThem(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.10.0.0/16"), netip.MustParsePrefix("::1/128")}
	for name, c := range map[string]struct {
		trusted []netip.Prefix
		remote  string
		xff     []string
		want    string
	}{
		"no trusted proxies":              {nil, "127.0.0.1:5000", []string{"127.9.9.9"}, "127.0.0.1"},
		"an untrusted peer":               {trusted, "127.0.0.2:5000", []string{"127.9.9.9"}, "127.0.0.2"},
		"a trusted peer":                  {trusted, "127.0.0.1:5000", []string{"127.9.9.9"}, "127.9.9.9"},
		"a trusted IPv6 peer":             {trusted, "[::1]:5000", []string{"127.9.9.9"}, "127.9.9.9"},
		"a chain of trusted proxies":      {trusted, "127.0.0.1:5000", []string{"127.8.8.8, 127.9.9.9, 127.10.0.5"}, "127.9.9.9"},
		"a forged leftmost address":       {trusted, "127.0.0.1:5000", []string{"127.1.1.1, 127.9.9.9"}, "127.9.9.9"},
		"two headers":                     {trusted, "127.0.0.1:5000", []string{"127.1.1.1", "127.9.9.9"}, "127.9.9.9"},
		"every address trusted":           {trusted, "127.0.0.1:5000", []string{"127.10.0.7, 127.10.0.5"}, "127.10.0.7"},
		"no header":                       {trusted, "127.0.0.1:5000", nil, "127.0.0.1"},
		"a header that is not an address": {trusted, "127.0.0.1:5000", []string{"127.9.9.9, unknown"}, "127.0.0.1"},
	} {
		var got string
		h := TrustProxies(c.trusted)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = ClientAddr(r) }))
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != c.want {
			t.Errorf("%s: client %q, want %q", name, got, c.want)
		}
	}
}
