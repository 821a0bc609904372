package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
	"github.com/profilesvc/profilesvc/adapters/prober"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

// TestProxyChecksThroughRealProxies runs the service's own prober against
// proxies and an IP echo service started on loopback.
func TestProxyChecksThroughRealProxies(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestProxyHostRefusalsReadAlike runs the service's own prober and guard,
// private targets refused, with a resolver of the test's own: one service
// knows no proxy.internal.test, the other resolves it to loopback. Every
// proxy endpoint answers both alike, byte for byte; a difference would tell
// a client which names exist inside the service's network.
func TestProxyHostRefusalsReadAlike(t *testing.T) {
	t.Parallel()
	const host = "proxy.internal.test"
	answers := map[string][]string{}
	for name, records := range map[string]map[string][]netip.Addr{
		"does not resolve": {
			"proxy.public.test": {netip.MustParseAddr("93.184.216.34")},
		},
		"resolves to loopback": {
			"proxy.public.test": {netip.MustParseAddr("93.184.216.34")},
			host:                {netip.MustParseAddr("127.0.0.1")},
		},
	} {
		resolver := netguardtest.FakeResolver(t, records)
		h := start(t, options{databaseURL: "memory://", extra: []fx.Option{fx.Decorate(func() (ports.ProxyProber, error) {
			// The check URL is never reached: every probe here is refused
			// before it leaves.
			return prober.New(prober.Options{CheckURL: "http://check.invalid/json", Timeout: 5 * time.Second, Resolver: resolver})
		})}})
		a := h.register(t)
		refused := map[string]any{"type": "http", "host": host, "port": 3128}
		var got []string
		errorOf := func(r response) {
			t.Helper()
			expect(t, r, http.StatusUnprocessableEntity)
			e, err := json.Marshal(r.env["error"])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(e))
		}
		errorOf(h.post("/api/v1/proxies", refused, bearer(a.access)...))
		errorOf(h.post("/api/v1/proxies/test", refused, bearer(a.access)...))
		// proxy.public.test resolves to a public address, given as data
		// only: saving it connects nowhere.
		id := str(h.addProxy(t, a, map[string]any{"type": "http", "host": "proxy.public.test", "port": 3128})["id"])
		errorOf(h.patch("/api/v1/proxies/"+id, map[string]any{"host": host}, bearer(a.access)...))

		// A saved name that leads somewhere else by the time it is checked.
		ctx := context.Background()
		saved, err := h.store.Proxies().ByID(ctx, a.teamID, id)
		if err != nil {
			t.Fatal(err)
		}
		moved := host
		if err := h.store.Proxies().Update(ctx, saved.Change(proxy.Change{Host: &moved}, time.Now())); err != nil {
			t.Fatal(err)
		}
		r := h.post("/api/v1/proxies/"+id+"/check", nil, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		d := r.data()
		got = append(got, fmt.Sprintf("ok=%v error=%v", d["ok"], d["error"]))
		answers[name] = got
	}
	want := `"issue":"host proxy.internal.test is not reachable or not allowed"`
	unknown, internal := answers["does not resolve"], answers["resolves to loopback"]
	for i := range unknown {
		if unknown[i] != internal[i] {
			t.Errorf("answer %d differs:\n does not resolve:     %s\n resolves to loopback: %s", i, unknown[i], internal[i])
		}
		if i < 3 && !strings.Contains(unknown[i], want) {
			t.Errorf("answer %d = %s, want it to say %s", i, unknown[i], want)
		}
	}
	if last := unknown[len(unknown)-1]; last != "ok=false error=proxy host not allowed" {
		t.Errorf("check = %s, want the guard's refusal", last)
	}
}
