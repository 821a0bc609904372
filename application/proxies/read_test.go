package proxies_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

// The profiles module reaches a team's proxy, with its password opened for
// the browser, and never another team's.
func TestTargetOpensThePasswordOfTheTeamsProxyOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxies.Policy{})
	p, err := e.svc.Add(ctx, member, proxies.Input{URL: "socks5://dave:" + password + "@exit.example:1080"})
	if err != nil {
		t.Fatal(err)
	}
	got, target, err := e.svc.Target(ctx, member.TeamID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || target.Type != "socks5" || target.Host != "exit.example" || target.Port != 1080 ||
		target.Username != "dave" || target.Password != password {
		t.Fatalf("target %+v of %s, want socks5 dave:%s@exit.example:1080", target, got.ID, password)
	}
	if _, _, err := e.svc.Target(ctx, other.TeamID, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team's target: %v, want not found", err)
	}
	if l, err := e.svc.Lookup(ctx, member.TeamID, p.ID); err != nil || l.ID != p.ID {
		t.Fatalf("lookup: %+v %v", l, err)
	}
	if _, err := e.svc.Lookup(ctx, other.TeamID, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team's lookup: %v, want not found", err)
	}

	// Without a password, the target has none.
	open, err := e.svc.Add(ctx, member, proxies.Input{Type: "http", Host: "open.example", Port: 3128})
	if err != nil {
		t.Fatal(err)
	}
	if _, target, err := e.svc.Target(ctx, member.TeamID, open.ID); err != nil || target.Password != "" || target.Username != "" {
		t.Fatalf("target of a proxy without credentials: %+v %v", target, err)
	}
}

// List pages newest first, filters by status, and refuses a status or a
// cursor it does not know; a viewer reads, another team sees nothing.
func TestListPagesFiltersAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxies.Policy{})
	var ids []string
	for _, host := range []string{"a.example", "b.example", "c.example"} {
		p, err := e.svc.Add(ctx, member, proxies.Input{Type: "http", Host: host, Port: 8080})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if _, err := e.svc.Check(ctx, member, ids[1]); err != nil {
		t.Fatal(err)
	}

	first, err := e.svc.List(ctx, viewer, "", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 2 || first.Items[0].ID != ids[2] || first.Items[1].ID != ids[1] || first.NextCursor == "" {
		t.Fatalf("first page %+v, want %s, %s and a cursor", first, ids[2], ids[1])
	}
	second, err := e.svc.List(ctx, viewer, "", first.NextCursor, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Items) != 1 || second.Items[0].ID != ids[0] || second.NextCursor != "" {
		t.Fatalf("second page %+v, want %s alone", second, ids[0])
	}

	ok, err := e.svc.List(ctx, member, "ok", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ok.Items) != 1 || ok.Items[0].ID != ids[1] || ok.Items[0].Status != proxy.StatusOK {
		t.Fatalf("status ok: %+v, want %s alone", ok.Items, ids[1])
	}
	if unknown, err := e.svc.List(ctx, member, "unknown", "", 10); err != nil || len(unknown.Items) != 2 {
		t.Fatalf("status unknown: %+v %v, want two", unknown.Items, err)
	}

	if _, err := e.svc.List(ctx, member, "broken", "", 10); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("status broken: %v, want bad request", err)
	}
	if _, err := e.svc.List(ctx, member, "", "prf_"+ids[0][4:], 10); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("a profile's cursor: %v, want bad request", err)
	}
	if theirs, err := e.svc.List(ctx, other, "", "", 10); err != nil || len(theirs.Items) != 0 {
		t.Fatalf("another team's list: %+v %v, want empty", theirs.Items, err)
	}
	if _, err := e.svc.List(ctx, member, "", "", 10); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Get(ctx, viewer, ids[0]); err != nil || got.Host != "a.example" {
		t.Fatalf("viewer get: %+v %v", got, err)
	}
}

// Update refuses what Add refuses, field by field, and keeps the proxy as
// it was; an empty password removes it.
func TestUpdateRefusesBadFieldsAndClearsThePassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxies.Policy{})
	p, err := e.svc.Add(ctx, member, proxies.Input{URL: "http://erin:" + password + "@h.example:8080"})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	port := func(n int) *int { return &n }
	for _, c := range []struct {
		in    proxies.UpdateInput
		field string
	}{
		{proxies.UpdateInput{Type: str("ftp")}, "type"},
		{proxies.UpdateInput{Port: port(70000)}, "port"},
		{proxies.UpdateInput{Host: str("")}, "host"},
		{proxies.UpdateInput{Host: str("10.0.0.1")}, "host"},
		{proxies.UpdateInput{Name: str(string(make([]byte, 300)))}, "name"},
	} {
		if _, err := e.svc.Update(ctx, member, p.ID, c.in); fieldOf(t, err) != c.field {
			t.Errorf("update %+v: field %q, want %q", c.in, fieldOf(t, err), c.field)
		}
	}
	if _, err := e.svc.Update(ctx, viewer, p.ID, proxies.UpdateInput{Name: str("x")}); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer update: %v, want forbidden", err)
	}
	if _, err := e.svc.Update(ctx, other, p.ID, proxies.UpdateInput{Name: str("x")}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team's update: %v, want not found", err)
	}
	kept, err := e.svc.Get(ctx, member, p.ID)
	if err != nil || kept.Host != "h.example" || kept.Port != 8080 || !kept.HasPassword() {
		t.Fatalf("after refused updates: %+v %v, want it unchanged", kept, err)
	}

	cleared, err := e.svc.Update(ctx, member, p.ID, proxies.UpdateInput{Password: str("")})
	if err != nil {
		t.Fatal(err)
	}
	if cleared.HasPassword() || cleared.Username != "erin" {
		t.Fatalf("after clearing the password: %+v", cleared)
	}
	if _, target, err := e.svc.Target(ctx, member.TeamID, p.ID); err != nil || target.Password != "" {
		t.Fatalf("target after clearing: %+v %v", target, err)
	}
}
