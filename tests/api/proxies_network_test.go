package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

// TestProxyChecksThroughRealProxies runs the service's own prober against
// proxies and an IP echo service started on loopback.
func TestProxyChecksThroughRealProxies(t *testing.T) {
	echo := conformance.StartIPEcho(t, conformance.IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam"))
	h := start(t, options{databaseURL: "memory://", env: map[string]string{
		"ALLOW_PRIVATE_TARGETS": "true", "PROXY_CHECK_URL": echo, "PROXY_CHECK_TIMEOUT": "5s"}})
	a := h.register(t)
	socks := conformance.StartSOCKS5Proxy(t, "frank", proxyPassword)
	connect := conformance.StartConnectProxy(t, "grace", proxyPassword)

	for _, c := range []struct {
		url  string
		ok   bool
		what string
	}{
		{fmt.Sprintf("socks5://frank:%s@%s:%d", proxyPassword, socks.Host, socks.Port), true, "socks5"},
		{fmt.Sprintf("http://grace:%s@%s:%d", proxyPassword, connect.Host, connect.Port), true, "http connect"},
		{fmt.Sprintf("socks5://frank:wrong-%s@%s:%d", proxyPassword, socks.Host, socks.Port), false, "socks5 with a wrong password"},
		{fmt.Sprintf("http://grace:wrong-%s@%s:%d", proxyPassword, connect.Host, connect.Port), false, "http connect with a wrong password"},
	} {
		id := str(h.addProxy(t, a, map[string]any{"url": c.url})["id"])
		r := h.post("/api/v1/proxies/"+id+"/check", nil, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		d := r.data()
		if d["ok"] != c.ok {
			t.Fatalf("%s: check %v, want ok %v", c.what, d, c.ok)
		}
		want := "failed"
		if c.ok {
			want = "ok"
			if d["exitIp"] != "127.0.0.1" || d["timezone"] != "Europe/Amsterdam" || d["country"] != "NL" || d["error"] != nil {
				t.Errorf("%s: check %v", c.what, d)
			}
		} else if msg := str(d["error"]); msg == "" || strings.Contains(msg, proxyPassword) {
			t.Errorf("%s: error %q", c.what, msg)
		}
		got := h.get("/api/v1/proxies/"+id, bearer(a.access)...)
		expect(t, got, http.StatusOK)
		if got.data()["status"] != want {
			t.Errorf("%s: status %v, want %s", c.what, got.data()["status"], want)
		}
	}
	if n := len(h.events(t, event.ProxyFailed)); n != 2 {
		t.Errorf("%d proxy.failed events, want 2", n)
	}
	closed := conformance.ClosedPort(t)
	r := h.post("/api/v1/proxies/test", map[string]any{"type": "http", "host": closed.Host, "port": closed.Port}, bearer(a.access)...)
	expect(t, r, http.StatusOK)
	if r.data()["ok"] != false || str(r.data()["error"]) == "" {
		t.Errorf("closed port: %v", r.data())
	}
}

// TestRealGuardRefusesInternalProxyHosts uses the service's own guard,
// which refuses loopback, private, link-local and metadata addresses, and
// names that resolve to them, unless private targets are allowed.
func TestRealGuardRefusesInternalProxyHosts(t *testing.T) {
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "localhost"} {
		r := h.post("/api/v1/proxies", map[string]any{"type": "socks5", "host": host, "port": 1080}, bearer(a.access)...)
		expect(t, r, http.StatusUnprocessableEntity)
		if f := r.errFields(); len(f) != 1 || f[0] != "host" {
			t.Errorf("%s: fields %v, want [host]", host, f)
		}
	}
}
