package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports"
)

const proxyPassword = "prx-pa55word-never-shown-7f3c"

// fakeProber answers every probe with its current result and refuses, as
// the real guard does, the hosts in refused.
type fakeProber struct {
	mu      sync.Mutex
	result  ports.ProbeResult
	targets []ports.ProxyTarget
}

var refusedProxyHosts = map[string]bool{"127.0.0.1": true, "10.0.0.1": true, "169.254.169.254": true, "localhost": true}

func newFakeProber() *fakeProber {
	return &fakeProber{result: ports.ProbeResult{OK: true, Latency: 120 * time.Millisecond, ExitIP: "203.0.113.77",
		Country: "JP", City: "Tokyo", Timezone: "Asia/Tokyo"}}
}

func (p *fakeProber) Probe(_ context.Context, t ports.ProxyTarget) ports.ProbeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = append(p.targets, t)
	return p.result
}

func (p *fakeProber) CheckHost(_ context.Context, host string) error {
	if refusedProxyHosts[host] {
		return errors.New("host " + host + " is not reachable or not allowed")
	}
	return nil
}

func (p *fakeProber) set(r ports.ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.result = r
}

func (p *fakeProber) probed() []ports.ProxyTarget {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ports.ProxyTarget(nil), p.targets...)
}

func proxyOptions(url string, pr *fakeProber, env map[string]string) options {
	return options{databaseURL: url, env: env, extra: []fx.Option{fx.Decorate(func() ports.ProxyProber { return pr })}}
}

func eachProxyBackend(t *testing.T, env map[string]string, fn func(t *testing.T, h *harness, pr *fakeProber, dbURL string)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			pr := newFakeProber()
			url := b.url(t)
			fn(t, start(t, proxyOptions(url, pr, env)), pr, url)
		})
	}
}

func (h *harness) addProxy(t *testing.T, a account, body map[string]any) map[string]any {
	t.Helper()
	r := h.post("/api/v1/proxies", body, bearer(a.access)...)
	expect(t, r, http.StatusCreated)
	return r.data()
}

func TestProxiesCRUD(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		a := h.register(t)
		p := h.addProxy(t, a, map[string]any{"name": "Office", "type": "socks5", "host": "proxy.example.com", "port": 1080, "username": "alice", "password": proxyPassword})
		id := str(p["id"])
		if !strings.HasPrefix(id, "prx_") || p["name"] != "Office" || p["type"] != "socks5" || p["host"] != "proxy.example.com" ||
			p["port"] != float64(1080) || p["username"] != "alice" || p["hasPassword"] != true || p["status"] != "unknown" || p["lastCheck"] != nil {
			t.Fatalf("added %v", p)
		}
		short := h.addProxy(t, a, map[string]any{"url": "http://bob:" + proxyPassword + "@gw.example.net:3128"})
		if short["type"] != "http" || short["host"] != "gw.example.net" || short["port"] != float64(3128) || short["username"] != "bob" ||
			short["hasPassword"] != true || short["name"] != "gw.example.net:3128" {
			t.Fatalf("short form %v", short)
		}
		bare := h.addProxy(t, a, map[string]any{"type": "https", "host": "2001:db8::5", "port": 443})
		if bare["hasPassword"] != false || bare["username"] != nil {
			t.Fatalf("without credentials %v", bare)
		}

		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"type": "ftp", "host": "h.example.com", "port": 21}, "type"},
			{map[string]any{"type": "http", "host": "h.example.com", "port": 0}, "port"},
			{map[string]any{"type": "http", "host": "h.example.com", "port": 65536}, "port"},
			{map[string]any{"type": "http", "host": "h/x", "port": 80}, "host"},
			{map[string]any{"type": "http", "host": "h.example.com", "port": 80, "name": "a\nb"}, "name"},
			{map[string]any{"url": "socks5://h.example.com"}, "url"},
			{map[string]any{"url": "socks5://h.example.com:1", "host": "x.example.com"}, "url"},
		} {
			r := h.post("/api/v1/proxies", c.body, bearer(a.access)...)
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); len(f) != 1 || f[0] != c.field {
				t.Errorf("%v: fields %v, want [%s]", c.body, f, c.field)
			}
		}

		r := h.get("/api/v1/proxies?limit=2", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		page := asList(r.env["data"])
		next := str(r.env["meta"].(map[string]any)["nextCursor"])
		if len(page) != 2 || str(page[0].(map[string]any)["id"]) != str(bare["id"]) || str(page[1].(map[string]any)["id"]) != str(short["id"]) || next == "" {
			t.Fatalf("first page %s", r.raw)
		}
		r = h.get("/api/v1/proxies?limit=2&cursor="+next, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if page = asList(r.env["data"]); len(page) != 1 || str(page[0].(map[string]any)["id"]) != id {
			t.Fatalf("second page %s", r.raw)
		}
		expect(t, h.get("/api/v1/proxies?status=dead", bearer(a.access)...), http.StatusBadRequest)

		r = h.patch("/api/v1/proxies/"+id, map[string]any{"name": "Office 2", "password": ""}, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if d := r.data(); d["name"] != "Office 2" || d["hasPassword"] != false || d["host"] != "proxy.example.com" {
			t.Fatalf("patched %v", d)
		}
		r = h.patch("/api/v1/proxies/"+id, map[string]any{"port": 70000}, bearer(a.access)...)
		expect(t, r, http.StatusUnprocessableEntity)
		if f := r.errFields(); len(f) != 1 || f[0] != "port" {
			t.Fatalf("patch port: fields %v", f)
		}
		got := h.get("/api/v1/proxies/"+id, bearer(a.access)...)
		expect(t, got, http.StatusOK)
		if got.data()["name"] != "Office 2" || got.data()["port"] != float64(1080) {
			t.Fatalf("read back %v", got.data())
		}

		// Another team sees none of it, on every verb.
		b := h.register(t)
		expect(t, h.get("/api/v1/proxies/"+id, bearer(b.access)...), http.StatusNotFound)
		expect(t, h.patch("/api/v1/proxies/"+id, map[string]any{"name": "x"}, bearer(b.access)...), http.StatusNotFound)
		expect(t, h.post("/api/v1/proxies/"+id+"/check", nil, bearer(b.access)...), http.StatusNotFound)
		expect(t, h.delete("/api/v1/proxies/"+id, bearer(b.access)...), http.StatusNotFound)
		r = h.get("/api/v1/proxies", bearer(b.access)...)
		expect(t, r, http.StatusOK)
		if len(asList(r.env["data"])) != 0 {
			t.Fatalf("another team lists %s", r.raw)
		}

		// In use by a profile: 409, until the profile lets it go.
		prf := h.createProfile(t, a, nil)
		ctx := context.Background()
		stored, err := h.store.Profiles().ByID(ctx, a.teamID, prf)
		if err != nil {
			t.Fatal(err)
		}
		next1 := stored
		next1.ProxyID, next1.Version = id, stored.Version+1
		if err := h.store.Profiles().Update(ctx, next1, stored.Version); err != nil {
			t.Fatal(err)
		}
		r = h.delete("/api/v1/proxies/"+id, bearer(a.access)...)
		expect(t, r, http.StatusConflict)
		expect(t, h.delete("/api/v1/profiles/"+prf, bearer(a.access)...), http.StatusNoContent)
		expect(t, h.delete("/api/v1/proxies/"+id, bearer(a.access)...), http.StatusNoContent)
		expect(t, h.get("/api/v1/proxies/"+id, bearer(a.access)...), http.StatusNotFound)
	})
}

func TestProxyChecksStatusEventsAndSecrets(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, pr *fakeProber, dbURL string) {
		a := h.register(t)
		p := h.addProxy(t, a, map[string]any{"name": "Tokyo", "url": "socks5://carol:" + proxyPassword + "@jp.example.com:1080"})
		id := str(p["id"])

		r := h.post("/api/v1/proxies/"+id+"/check", nil, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		want := map[string]any{"ok": true, "latencyMs": float64(120), "exitIp": "203.0.113.77", "country": "JP", "city": "Tokyo", "timezone": "Asia/Tokyo", "error": nil}
		for k, v := range want {
			if r.data()[k] != v {
				t.Errorf("check %s = %v, want %v", k, r.data()[k], v)
			}
		}
		if got := pr.probed(); len(got) != 1 || got[0] != (ports.ProxyTarget{Type: "socks5", Host: "jp.example.com", Port: 1080, Username: "carol", Password: proxyPassword}) {
			t.Fatalf("probed %+v", got)
		}
		got := h.get("/api/v1/proxies/"+id, bearer(a.access)...)
		expect(t, got, http.StatusOK)
		last, _ := got.data()["lastCheck"].(map[string]any)
		if got.data()["status"] != "ok" || last == nil || last["exitIp"] != "203.0.113.77" || last["checkedAt"] == nil {
			t.Fatalf("after an ok check %v", got.data())
		}

		pr.set(ports.ProbeResult{Error: "the proxy refused the username or password"})
		r = h.post("/api/v1/proxies/"+id+"/check", nil, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if r.data()["ok"] != false || r.data()["error"] != "the proxy refused the username or password" || r.data()["exitIp"] != nil {
			t.Fatalf("failed check %v", r.data())
		}
		r = h.get("/api/v1/proxies?status=failed", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if l := asList(r.env["data"]); len(l) != 1 || str(l[0].(map[string]any)["id"]) != id {
			t.Fatalf("?status=failed %s", r.raw)
		}
		r = h.get("/api/v1/proxies?status=ok", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if l := asList(r.env["data"]); len(l) != 0 {
			t.Fatalf("?status=ok %s", r.raw)
		}

		added := h.events(t, event.ProxyAdded)
		failed := h.events(t, event.ProxyFailed)
		if len(added) != 1 || len(failed) != 1 {
			t.Fatalf("%d proxy.added and %d proxy.failed events, want 1 and 1", len(added), len(failed))
		}
		wantProxy := map[string]any{"id": id, "name": "Tokyo", "type": "socks5", "host": "jp.example.com", "port": float64(1080)}
		for _, e := range append(added, failed...) {
			d := eventData(t, e)
			px, _ := d["proxy"].(map[string]any)
			if len(px) != len(wantProxy) {
				t.Errorf("%s data.proxy %v, want %v", e.Type, px, wantProxy)
			}
			for k, v := range wantProxy {
				if px[k] != v {
					t.Errorf("%s data.proxy.%s = %v, want %v", e.Type, k, px[k], v)
				}
			}
			if e.TeamID != a.teamID {
				t.Errorf("%s of team %s, want %s", e.Type, e.TeamID, a.teamID)
			}
		}
		if d := eventData(t, failed[0]); d["error"] != "the proxy refused the username or password" {
			t.Errorf("proxy.failed error %v", d["error"])
		}

		// The test endpoint answers the same shape and stores nothing.
		before := len(h.events(t))
		pr.set(ports.ProbeResult{OK: true, Latency: 5 * time.Millisecond, ExitIP: "198.51.100.3"})
		r = h.post("/api/v1/proxies/test", map[string]any{"type": "http", "host": "t.example.com", "port": 8080, "username": "u", "password": proxyPassword}, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if r.data()["ok"] != true || r.data()["exitIp"] != "198.51.100.3" || r.data()["latencyMs"] != float64(5) || r.data()["timezone"] != nil {
			t.Fatalf("test %v", r.data())
		}
		if n := len(h.events(t)); n != before {
			t.Fatalf("a test emitted %d events", n-before)
		}
		r = h.get("/api/v1/proxies", bearer(a.access)...)
		if len(asList(r.env["data"])) != 1 {
			t.Fatalf("a test stored a proxy: %s", r.raw)
		}

		// The password is in no response, no event, no log line, and not
		// readable in the SQLite file.
		h.mu.Lock()
		for _, body := range h.bodies {
			if bytes.Contains(body, []byte(proxyPassword)) {
				t.Errorf("a response contains the proxy password: %s", truncate(body))
			}
		}
		h.mu.Unlock()
		for _, e := range h.events(t) {
			if bytes.Contains(e.Data, []byte(proxyPassword)) {
				t.Errorf("event %s contains the proxy password", e.Type)
			}
		}
		for _, e := range h.logs.All() {
			b, _ := json.Marshal(e.ContextMap())
			if strings.Contains(e.Message+" "+string(b), proxyPassword) {
				t.Errorf("a log line contains the proxy password: %s %s", e.Message, b)
			}
		}
		if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
			h.stop()
			files, _ := filepath.Glob(path + "*")
			if len(files) == 0 {
				t.Fatalf("no database file at %s", path)
			}
			for _, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(raw, []byte(proxyPassword)) {
					t.Errorf("%s holds the proxy password in the clear", f)
				}
				if !bytes.Contains(raw, []byte("jp.example.com")) && filepath.Base(f) == filepath.Base(path) {
					t.Errorf("%s does not hold the proxy at all: the check proves nothing", f)
				}
			}
		}
	})
}

func TestProxyTestsAreRateLimitedPerTeam(t *testing.T) {
	t.Parallel()
	pr := newFakeProber()
	h := start(t, proxyOptions("memory://", pr, map[string]string{"QUOTA_PROXY_CHECKS_PER_MINUTE": "2"}))
	a, b := h.register(t), h.register(t)
	body := map[string]any{"url": "http://t.example.com:8080"}
	for range 2 {
		expect(t, h.post("/api/v1/proxies/test", body, bearer(a.access)...), http.StatusOK)
	}
	r := h.post("/api/v1/proxies/test", body, bearer(a.access)...)
	expect(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	p := h.addProxy(t, a, body)
	expect(t, h.post("/api/v1/proxies/"+str(p["id"])+"/check", nil, bearer(a.access)...), http.StatusTooManyRequests)
	expect(t, h.post("/api/v1/proxies/test", body, bearer(b.access)...), http.StatusOK)
	h.clock.Advance(time.Minute)
	expect(t, h.post("/api/v1/proxies/test", body, bearer(a.access)...), http.StatusOK)
	if n := len(pr.probed()); n != 4 {
		t.Fatalf("%d probes, want 4: refused tests must not reach the network", n)
	}
}

func TestProxyHostsAreGuarded(t *testing.T) {
	t.Parallel()
	pr := newFakeProber()
	h := start(t, proxyOptions("memory://", pr, nil))
	a := h.register(t)
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "localhost"} {
		for _, path := range []string{"/api/v1/proxies", "/api/v1/proxies/test"} {
			r := h.post(path, map[string]any{"type": "http", "host": host, "port": 8080}, bearer(a.access)...)
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); len(f) != 1 || f[0] != "host" {
				t.Errorf("%s %s: fields %v, want [host]", path, host, f)
			}
		}
	}
	p := h.addProxy(t, a, map[string]any{"type": "http", "host": "ok.example.com", "port": 8080})
	r := h.patch("/api/v1/proxies/"+str(p["id"]), map[string]any{"host": "169.254.169.254"}, bearer(a.access)...)
	expect(t, r, http.StatusUnprocessableEntity)
	if f := r.errFields(); len(f) != 1 || f[0] != "host" {
		t.Errorf("patch: fields %v, want [host]", f)
	}
	if n := len(pr.probed()); n != 0 {
		t.Fatalf("%d probes of refused hosts", n)
	}
}

func TestProfilesTakeTheirTeamsProxies(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		a, b := h.register(t), h.register(t)
		mine := str(h.addProxy(t, a, map[string]any{"name": "Mine", "type": "http", "host": "mine.example.com", "port": 3128})["id"])
		theirs := str(h.addProxy(t, b, map[string]any{"type": "http", "host": "theirs.example.com", "port": 3128})["id"])
		countProxies := func() int {
			r := h.get("/api/v1/proxies?limit=100", bearer(a.access)...)
			expect(t, r, http.StatusOK)
			return len(asList(r.env["data"]))
		}
		wantView := func(what string, got any, id, typ, host string, port int) {
			t.Helper()
			m, _ := got.(map[string]any)
			want := map[string]any{"id": id, "type": typ, "host": host, "port": float64(port)}
			if len(m) != len(want) {
				t.Fatalf("%s: proxy %v, want %v", what, got, want)
			}
			for k, v := range want {
				if m[k] != v {
					t.Fatalf("%s: proxy.%s = %v, want %v", what, k, m[k], v)
				}
			}
		}

		r := h.post("/api/v1/profiles", map[string]any{"name": "p1", "templateId": windowsTemplate, "proxy": map[string]any{"id": mine}}, bearer(a.access)...)
		expect(t, r, http.StatusCreated)
		p1 := str(r.data()["id"])
		wantView("create by id", r.data()["proxy"], mine, "http", "mine.example.com", 3128)

		for _, id := range []string{theirs, "prx_01HZZZZZZZZZZZZZZZZZZZZZZZ"} {
			r = h.post("/api/v1/profiles", map[string]any{"name": "x", "templateId": windowsTemplate, "proxy": map[string]any{"id": id}}, bearer(a.access)...)
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); len(f) != 1 || f[0] != "proxy.id" {
				t.Fatalf("proxy %s: fields %v, want [proxy.id]", id, f)
			}
		}

		r = h.post("/api/v1/profiles", map[string]any{"name": "p2", "templateId": windowsTemplate,
			"proxy": map[string]any{"type": "socks5", "host": "inline.example.com", "port": 1080, "username": "dave", "password": proxyPassword}}, bearer(a.access)...)
		expect(t, r, http.StatusCreated)
		p2 := str(r.data()["id"])
		m, _ := r.data()["proxy"].(map[string]any)
		inline := str(m["id"])
		wantView("create inline", r.data()["proxy"], inline, "socks5", "inline.example.com", 1080)
		got := h.get("/api/v1/proxies/"+inline, bearer(a.access)...)
		expect(t, got, http.StatusOK)
		if got.data()["hasPassword"] != true || got.data()["username"] != "dave" {
			t.Fatalf("inline proxy stored as %v", got.data())
		}
		if n := countProxies(); n != 2 {
			t.Fatalf("%d proxies, want 2", n)
		}

		for _, c := range []struct {
			proxy any
			field string
		}{
			{map[string]any{"type": "socks5", "host": "bad.example.com", "port": 0}, "proxy.port"},
			{map[string]any{"type": "http", "host": "10.0.0.1", "port": 8080}, "proxy.host"},
			{map[string]any{"url": "ftp://x.example.com:21"}, "proxy.url"},
		} {
			r = h.post("/api/v1/profiles", map[string]any{"name": "x", "templateId": windowsTemplate, "proxy": c.proxy}, bearer(a.access)...)
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); len(f) != 1 || f[0] != c.field {
				t.Fatalf("%v: fields %v, want [%s]", c.proxy, f, c.field)
			}
		}
		if n := countProxies(); n != 2 {
			t.Fatalf("refused profiles stored proxies: %d, want 2", n)
		}

		// PATCH: inline by url, then a stale If-Match stores nothing, then
		// another team's id, then null.
		r = h.patch("/api/v1/profiles/"+p1, map[string]any{"proxy": map[string]any{"url": "http://erin:" + proxyPassword + "@patched.example.com:8080"}}, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		m, _ = r.data()["proxy"].(map[string]any)
		patched := str(m["id"])
		wantView("patch inline", r.data()["proxy"], patched, "http", "patched.example.com", 8080)
		r = h.do(req{method: http.MethodPatch, path: "/api/v1/profiles/" + p1, body: map[string]any{"proxy": map[string]any{"url": "http://stale.example.com:8080"}},
			headers: pairs(append(bearer(a.access), "If-Match", `"1"`))})
		expect(t, r, http.StatusPreconditionFailed)
		if n := countProxies(); n != 3 {
			t.Fatalf("%d proxies after a refused PATCH, want 3", n)
		}
		r = h.patch("/api/v1/profiles/"+p1, map[string]any{"proxy": map[string]any{"id": theirs}}, bearer(a.access)...)
		expect(t, r, http.StatusUnprocessableEntity)
		if f := r.errFields(); len(f) != 1 || f[0] != "proxy.id" {
			t.Fatalf("patch to another team's proxy: fields %v", f)
		}
		r = h.get("/api/v1/profiles/"+p2, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		wantView("read", r.data()["proxy"], inline, "socks5", "inline.example.com", 1080)
		r = h.get("/api/v1/profiles", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		for _, it := range asList(r.env["data"]) {
			pm := it.(map[string]any)
			if str(pm["id"]) == p1 {
				wantView("list", pm["proxy"], patched, "http", "patched.example.com", 8080)
			}
		}

		// The proxy in use cannot go; once the profile lets it go, it can.
		expect(t, h.delete("/api/v1/proxies/"+inline, bearer(a.access)...), http.StatusConflict)
		r = h.patch("/api/v1/profiles/"+p2, map[string]any{"proxy": nil}, bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if r.data()["proxy"] != nil {
			t.Fatalf("proxy after null: %v", r.data()["proxy"])
		}
		expect(t, h.delete("/api/v1/proxies/"+inline, bearer(a.access)...), http.StatusNoContent)

		// Events: proxy.added for each proxy of a (two added, two inline),
		// proxy.assigned for each assignment, with data.proxy and
		// data.profile, and never the password.
		var addedA int
		for _, e := range h.events(t, event.ProxyAdded) {
			if e.TeamID == a.teamID {
				addedA++
			}
		}
		if addedA != 3 {
			t.Errorf("%d proxy.added of team a, want 3 (one added, two inline)", addedA)
		}
		assigned := h.events(t, event.ProxyAssigned)
		wantAssigned := []struct{ profile, proxy string }{{p1, mine}, {p2, inline}, {p1, patched}}
		if len(assigned) != len(wantAssigned) {
			t.Fatalf("%d proxy.assigned events, want %d", len(assigned), len(wantAssigned))
		}
		for i, e := range assigned {
			d := eventData(t, e)
			px, _ := d["proxy"].(map[string]any)
			pf, _ := d["profile"].(map[string]any)
			if str(px["id"]) != wantAssigned[i].proxy || str(pf["id"]) != wantAssigned[i].profile || px["host"] == nil || px["port"] == nil || px["name"] == nil {
				t.Errorf("proxy.assigned %d: %s", i, e.Data)
			}
			if bytes.Contains(e.Data, []byte(proxyPassword)) {
				t.Errorf("proxy.assigned carries the password")
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, body := range h.bodies {
			if bytes.Contains(body, []byte(proxyPassword)) {
				t.Errorf("a response contains the proxy password: %s", truncate(body))
			}
		}
	})
}

// TestDeletingAProxyRacesNoAssignment deletes a proxy while profiles take
// it: afterwards either the proxy exists or no profile names it.
func TestDeletingAProxyRacesNoAssignment(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		a := h.register(t)
		profiles := make([]string, 4)
		for i := range profiles {
			profiles[i] = h.createProfile(t, a, nil)
		}
		for round := range 10 {
			id := str(h.addProxy(t, a, map[string]any{"type": "http", "host": "race.example.com", "port": 8080})["id"])
			var wg sync.WaitGroup
			for _, p := range profiles {
				wg.Go(func() {
					h.rawDo(http.MethodPatch, "/api/v1/profiles/"+p, `{"proxy":{"id":"`+id+`"}}`, bearer(a.access)...)
				})
			}
			wg.Go(func() { h.rawDo(http.MethodDelete, "/api/v1/proxies/"+id, "", bearer(a.access)...) })
			wg.Wait()
			if h.get("/api/v1/proxies/"+id, bearer(a.access)...).status == http.StatusOK {
				continue
			}
			for _, p := range profiles {
				r := h.get("/api/v1/profiles/"+p, bearer(a.access)...)
				expect(t, r, http.StatusOK)
				if m, _ := r.data()["proxy"].(map[string]any); str(m["id"]) == id {
					t.Fatalf("round %d: profile %s names the deleted proxy %s", round, p, id)
				}
			}
		}
	})
}
