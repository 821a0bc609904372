package proxies_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/adapters/secretbox"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

var (
	ctx    = context.Background()
	t0     = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	admin  = team.Actor{UserID: "usr_admin", TeamID: "team_1", MemberID: "mem_admin", Role: team.RoleAdmin}
	member = team.Actor{UserID: "usr_member", TeamID: "team_1", MemberID: "mem_member", Role: team.RoleMember}
	viewer = team.Actor{UserID: "usr_viewer", TeamID: "team_1", MemberID: "mem_viewer", Role: team.RoleViewer}
	other  = team.Actor{UserID: "usr_other", TeamID: "team_2", MemberID: "mem_other", Role: team.RoleOwner}
)

const password = "pa55-w0rd-never-shown"

// fakeProber answers every probe with result and records the targets;
// CheckHost refuses the hosts in refuse.
type fakeProber struct {
	mu      sync.Mutex
	result  ports.ProbeResult
	targets []ports.ProxyTarget
	refuse  map[string]bool
}

func (p *fakeProber) Probe(_ context.Context, t ports.ProxyTarget) ports.ProbeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = append(p.targets, t)
	return p.result
}

func (p *fakeProber) CheckHost(_ context.Context, host string) error {
	if p.refuse[host] {
		return errors.New("must not be a loopback, private, link-local or metadata address")
	}
	return nil
}

type env struct {
	svc    *proxies.Service
	store  *memory.Store
	prober *fakeProber
	clock  *clock.Fake
	logs   *apptest.Logs
}

func newEnv(t *testing.T, policy proxies.Policy) env {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	apptest.Seed(t, st.Users(), st.Teams(), t0)
	clk := clock.NewFake(t0)
	pr := &fakeProber{result: ports.ProbeResult{OK: true, Latency: 87 * time.Millisecond, ExitIP: "203.0.113.5", Country: "DE", City: "Berlin", Timezone: "Europe/Berlin"},
		refuse: map[string]bool{"127.0.0.1": true, "10.0.0.1": true}}
	logs := &apptest.Logs{}
	svc := proxies.New(proxies.Deps{Tx: unit.New(st, nil), Teams: st.Teams(), Proxies: st.Proxies(), Outbox: st.Outbox(), Prober: pr, Box: box,
		Limiter: ratelimit.NewLocal(clk), Clock: clk, IDs: apptest.NewIDs(), Log: logs.Logger(), Policy: policy})
	return env{svc: svc, store: st, prober: pr, clock: clk, logs: logs}
}

func (e env) events(t *testing.T) []event.Event {
	t.Helper()
	evs, err := e.store.Outbox().ListAfter(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) == 0 {
		t.Fatalf("err = %v, want a validation error", err)
	}
	return de.Fields[0].Field
}

func TestAddSealsThePasswordAndEmitsProxyAdded(t *testing.T) {
	e := newEnv(t, proxies.Policy{})
	p, err := e.svc.Add(ctx, member, proxies.Input{URL: "socks5://alice:" + password + "@proxy.example.com:1080", Name: "Office"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Office" || p.Type != proxy.TypeSOCKS5 || p.Host != "proxy.example.com" || p.Port != 1080 || p.Username != "alice" || !p.HasPassword() {
		t.Fatalf("added %+v", p)
	}
	if bytes.Contains(p.PasswordSealed, []byte(password)) {
		t.Fatal("the password is stored in the clear")
	}
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != event.ProxyAdded {
		t.Fatalf("events %+v, want one proxy.added", evs)
	}
	var data map[string]map[string]any
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": p.ID, "name": "Office", "type": "socks5", "host": "proxy.example.com", "port": float64(1080)}
	if len(data) != 1 || len(data["proxy"]) != len(want) {
		t.Fatalf("data %s", evs[0].Data)
	}
	for k, v := range want {
		if data["proxy"][k] != v {
			t.Errorf("data.proxy.%s = %v, want %v", k, data["proxy"][k], v)
		}
	}
	if strings.Contains(string(evs[0].Data), password) {
		t.Fatal("the event carries the password")
	}
}

func TestAddRefusesBadFieldsAndPrivateHosts(t *testing.T) {
	e := newEnv(t, proxies.Policy{})
	cases := map[string]proxies.Input{
		"type": {Type: "ftp", Host: "h.example", Port: 1},
		"port": {Type: "http", Host: "h.example", Port: 70000},
		"host": {Type: "http", Host: "127.0.0.1", Port: 8080},
		"url":  {URL: "socks5://h.example"},
	}
	for want, in := range cases {
		_, err := e.svc.Add(ctx, member, in)
		if got := fieldOf(t, err); got != want {
			t.Errorf("%+v: field %q, want %q", in, got, want)
		}
	}
	if _, err := e.svc.Update(ctx, member, "prx_missing", proxies.UpdateInput{}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("update of a missing proxy: %v", err)
	}
	p, err := e.svc.Add(ctx, member, proxies.Input{Type: "http", Host: "h.example", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	host := "10.0.0.1"
	if _, err := e.svc.Update(ctx, member, p.ID, proxies.UpdateInput{Host: &host}); fieldOf(t, err) != "host" {
		t.Fatal("update to a private host was not refused on host")
	}
	allowed := newEnv(t, proxies.Policy{AllowPrivateTargets: true})
	if _, err := allowed.svc.Add(ctx, member, proxies.Input{Type: "http", Host: "127.0.0.1", Port: 8080}); err != nil {
		t.Fatalf("private host with private targets allowed: %v", err)
	}
}

func TestRolesAndTeams(t *testing.T) {
	e := newEnv(t, proxies.Policy{})
	in := proxies.Input{Type: "http", Host: "h.example", Port: 8080}
	if _, err := e.svc.Add(ctx, viewer, in); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer add: %v", err)
	}
	p, err := e.svc.Add(ctx, member, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, member, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("member delete: %v", err)
	}
	if _, err := e.svc.Get(ctx, other, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("other team get: %v", err)
	}
	if _, err := e.svc.Check(ctx, other, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("other team check: %v", err)
	}
	if err := e.svc.Delete(ctx, other, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("other team delete: %v", err)
	}
	if err := e.svc.Delete(ctx, admin, p.ID); err != nil {
		t.Fatalf("admin delete: %v", err)
	}
}

func TestDeleteInUseIsAConflict(t *testing.T) {
	e := newEnv(t, proxies.Policy{})
	p, err := e.svc.Add(ctx, member, proxies.Input{Type: "http", Host: "h.example", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	prof := profile.Profile{ID: "prf_1", TeamID: member.TeamID, Name: "p", TemplateID: "tpl_chrome_win_us", ProxyID: p.ID, Version: 1, CreatedAt: t0, UpdatedAt: t0}
	if _, err := e.store.Profiles().Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, admin, p.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("delete in use: %v, want conflict", err)
	}
}

func TestCheckStoresTheResultAndEmitsProxyFailed(t *testing.T) {
	e := newEnv(t, proxies.Policy{})
	p, err := e.svc.Add(ctx, member, proxies.Input{Type: "socks5", Host: "h.example", Port: 1080, Username: "bob", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	c, err := e.svc.Check(ctx, member, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK || c.LatencyMs != 87 || c.ExitIP != "203.0.113.5" || c.Timezone != "Europe/Berlin" || !c.CheckedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("check %+v", c)
	}
	if got := e.prober.targets[0]; got.Password != password || got.Username != "bob" || got.Host != "h.example" || got.Port != 1080 || got.Type != "socks5" {
		t.Fatalf("probed %+v: the sealed password must be opened for the prober", got)
	}
	stored, _ := e.svc.Get(ctx, member, p.ID)
	if stored.Status != proxy.StatusOK || stored.LastCheck == nil || stored.LastCheck.ExitIP != "203.0.113.5" {
		t.Fatalf("stored %+v", stored)
	}
	if n := len(e.events(t)); n != 1 {
		t.Fatalf("an ok check emitted events: %d events", n)
	}
	e.prober.result = ports.ProbeResult{OK: false, Error: "the proxy refused the username or password"}
	c, err = e.svc.Check(ctx, member, p.ID)
	if err != nil || c.OK || c.Error != "the proxy refused the username or password" {
		t.Fatalf("failed check %+v %v", c, err)
	}
	stored, _ = e.svc.Get(ctx, member, p.ID)
	if stored.Status != proxy.StatusFailed || stored.LastCheck.OK {
		t.Fatalf("stored after failure %+v", stored)
	}
	evs := e.events(t)
	if len(evs) != 2 || evs[1].Type != event.ProxyFailed {
		t.Fatalf("events %+v, want proxy.added then proxy.failed", evs)
	}
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), password) {
			t.Fatalf("event %s carries the password", ev.Type)
		}
	}
	for _, line := range e.logs.Lines() {
		if strings.Contains(line, password) {
			t.Fatalf("log line carries the password: %s", line)
		}
	}
	page, err := e.svc.List(ctx, member, "failed", "", 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != p.ID {
		t.Fatalf("list failed: %+v %v", page, err)
	}
	if page, err = e.svc.List(ctx, member, "ok", "", 10); err != nil || len(page.Items) != 0 {
		t.Fatalf("list ok: %+v %v", page, err)
	}
	if _, err := e.svc.List(ctx, member, "dead", "", 10); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("bad status: %v", err)
	}
}

func TestTestStoresNothingAndIsRateLimited(t *testing.T) {
	e := newEnv(t, proxies.Policy{ProbesPerMinute: 2})
	in := proxies.Input{URL: "http://carol:" + password + "@h.example:3128"}
	for i := range 2 {
		c, err := e.svc.Test(ctx, member, in)
		if err != nil || !c.OK || c.ExitIP != "203.0.113.5" {
			t.Fatalf("test %d: %+v %v", i, c, err)
		}
	}
	if got := e.prober.targets[0]; got.Password != password || got.Type != "http" || got.Port != 3128 {
		t.Fatalf("probed %+v", got)
	}
	_, err := e.svc.Test(ctx, member, in)
	var de *domain.Error
	if !domain.IsKind(err, domain.KindRateLimited) || !errors.As(err, &de) || de.RetryAfter <= 0 {
		t.Fatalf("third test in a minute: %v, want rate limited with a wait", err)
	}
	if _, err := e.svc.Test(ctx, other, in); err != nil {
		t.Fatalf("another team has its own budget: %v", err)
	}
	e.clock.Advance(time.Minute)
	if _, err := e.svc.Test(ctx, member, in); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if n, _ := e.store.Proxies().Count(ctx, member.TeamID); n != 0 || len(e.events(t)) != 0 {
		t.Fatalf("test stored %d proxies and %d events", n, len(e.events(t)))
	}
}

func TestQuota(t *testing.T) {
	e := newEnv(t, proxies.Policy{MaxProxies: 1})
	in := proxies.Input{Type: "http", Host: "h.example", Port: 8080}
	if _, err := e.svc.Add(ctx, member, in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Add(ctx, member, in); fieldOf(t, err) != "quota" {
		t.Fatal("second proxy over a quota of one")
	}
}
