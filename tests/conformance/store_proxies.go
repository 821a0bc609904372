package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/proxystore"
)

func (f storeFixture) proxy(teamID string) proxy.Proxy {
	return proxy.Proxy{
		ID: storeID("prx"), TeamID: teamID, Name: "Office \u00e9\u4e16 \"quoted\"", Type: proxy.TypeSOCKS5,
		Host: "proxy.example.com", Port: 1080, Username: "alice", PasswordSealed: storeHash(41),
		Status: proxy.StatusUnknown, CreatedAt: storeAt(0).In(storeZone), UpdatedAt: storeAt(time.Minute).In(storeZone),
	}
}

func (f storeFixture) createProxies(ps ...proxy.Proxy) {
	f.t.Helper()
	for _, p := range ps {
		f.must("create proxy "+p.ID, f.s.Proxies().Create(f.ctx, p))
	}
}

func (f storeFixture) expectProxy(ctx context.Context, want proxy.Proxy) {
	f.t.Helper()
	got, err := f.s.Proxies().ByID(ctx, want.TeamID, want.ID)
	if err != nil {
		f.t.Fatalf("proxy %s: %v", want.ID, err)
	}
	checkEqual(f.t, "proxy", got, want)
}

func proxyIDs(ps []proxy.Proxy) []string {
	return ids(ps, func(p proxy.Proxy) string { return p.ID })
}

func runProxyRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		full := f.proxy(storeID("tm"))
		full.Status = proxy.StatusFailed
		full.LastCheck = &proxy.Check{CheckedAt: storeAt(2 * time.Minute).In(storeZone), OK: false, LatencyMs: 1234,
			ExitIP: "203.0.113.9", Country: "DE", City: "Berlin \u00fc", Timezone: "Europe/Berlin", Error: "the proxy refused the password"}
		bare := f.proxy(full.TeamID)
		bare.Type, bare.Username, bare.PasswordSealed = proxy.TypeHTTP, "", nil
		f.createProxies(full, bare)
		f.expectProxy(f.ctx, full)
		f.expectProxy(f.ctx, bare)
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.proxy(storeID("tm"))
		p.LastCheck = &proxy.Check{CheckedAt: storeAt(0), OK: true, ExitIP: "203.0.113.1"}
		want := p
		want.PasswordSealed = slices.Clone(p.PasswordSealed)
		c := *p.LastCheck
		want.LastCheck = &c
		f.createProxies(p)
		p.PasswordSealed[0]++
		p.LastCheck.ExitIP = "changed"
		got, err := f.s.Proxies().ByID(f.ctx, want.TeamID, want.ID)
		f.must("ByID", err)
		checkEqual(t, "proxy", got, want)
		got.PasswordSealed[0]++
		got.LastCheck.ExitIP = "changed"
		f.expectProxy(f.ctx, want)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.proxy(storeID("tm"))
		f.createProxies(p)
		again := f.proxy(storeID("tm"))
		again.ID = p.ID
		expectConflict(t, "Create with the same id", f.s.Proxies().Create(f.ctx, again))
		f.expectProxy(f.ctx, p)
	})

	t.Run("missing and another team's proxy are not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.proxy(storeID("tm"))
		f.createProxies(p)
		_, err := f.s.Proxies().ByID(f.ctx, p.TeamID, storeID("prx"))
		expectNotFound(t, "ByID of an unknown id", err)
		other := storeID("tm")
		_, err = f.s.Proxies().ByID(f.ctx, other, p.ID)
		expectNotFound(t, "ByID from another team", err)
		moved := p
		moved.TeamID, moved.Host = other, "elsewhere.example.com"
		expectNotFound(t, "Update from another team", f.s.Proxies().Update(f.ctx, moved))
		expectNotFound(t, "Delete from another team", f.s.Proxies().Delete(f.ctx, other, p.ID))
		expectNotFound(t, "Update of an unknown id", f.s.Proxies().Update(f.ctx, f.proxy(p.TeamID)))
		expectNotFound(t, "Delete of an unknown id", f.s.Proxies().Delete(f.ctx, p.TeamID, storeID("prx")))
		f.expectProxy(f.ctx, p)
	})

	t.Run("List pages newest first within the team, by status", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		ps := make([]proxy.Proxy, 5)
		for i := range ps {
			ps[i] = f.proxy(teamID)
		}
		ps[1].Status, ps[3].Status = proxy.StatusFailed, proxy.StatusFailed
		ps[2].Status = proxy.StatusOK
		f.createProxies(f.proxy(storeID("tm")))
		for _, i := range []int{2, 0, 4, 1, 3} {
			f.createProxies(ps[i])
		}
		all := proxyIDs(ps)
		slices.Reverse(all)
		list := func(what string, flt proxystore.Filter) []string {
			got, err := f.s.Proxies().List(f.ctx, teamID, flt)
			f.must(what, err)
			return proxyIDs(got)
		}
		got, err := f.s.Proxies().List(f.ctx, teamID, proxystore.Filter{Limit: 10})
		f.must("List", err)
		checkIDs(t, "List all", proxyIDs(got), all)
		for i := range got {
			checkEqual(t, "proxy", got[i], ps[len(ps)-1-i])
		}
		checkIDs(t, "first page", list("first page", proxystore.Filter{Limit: 2}), all[:2])
		checkIDs(t, "second page", list("second page", proxystore.Filter{BeforeID: all[1], Limit: 2}), all[2:4])
		checkIDs(t, "limit 0", list("limit 0", proxystore.Filter{}), []string{})
		checkIDs(t, "failed", list("failed", proxystore.Filter{Status: proxy.StatusFailed, Limit: 10}), []string{ps[3].ID, ps[1].ID})
		checkIDs(t, "failed, second page", list("failed page", proxystore.Filter{Status: proxy.StatusFailed, BeforeID: ps[3].ID, Limit: 10}), []string{ps[1].ID})
		checkIDs(t, "ok", list("ok", proxystore.Filter{Status: proxy.StatusOK, Limit: 10}), []string{ps[2].ID})
		checkIDs(t, "unknown", list("unknown", proxystore.Filter{Status: proxy.StatusUnknown, Limit: 10}), []string{ps[4].ID, ps[0].ID})
		n, err := f.s.Proxies().Count(f.ctx, teamID)
		f.must("Count", err)
		none, err := f.s.Proxies().Count(f.ctx, storeID("tm"))
		f.must("Count of another team", err)
		if n != 5 || none != 0 {
			t.Errorf("Count = %d and %d for a team without proxies, want 5 and 0", n, none)
		}
	})

	t.Run("Update replaces all but id, team and creation time", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.proxy(storeID("tm"))
		f.createProxies(p)
		next := p
		next.Name, next.Type, next.Host, next.Port, next.Username, next.PasswordSealed = "Renamed", proxy.TypeHTTPS, "other.example.com", 8443, "bob", nil
		next.Status = proxy.StatusOK
		next.LastCheck = &proxy.Check{CheckedAt: storeAt(time.Hour), OK: true, LatencyMs: 87, ExitIP: "198.51.100.7", Timezone: "Asia/Tokyo"}
		next.UpdatedAt = storeAt(time.Hour)
		next.CreatedAt = storeAt(time.Hour * 24)
		f.must("Update", f.s.Proxies().Update(f.ctx, next))
		next.CreatedAt = p.CreatedAt
		f.expectProxy(f.ctx, next)
		cleared := next
		cleared.LastCheck, cleared.Status = nil, proxy.StatusUnknown
		f.must("Update clearing the check", f.s.Proxies().Update(f.ctx, cleared))
		f.expectProxy(f.ctx, cleared)
	})

	t.Run("Delete while a profile of the team uses the proxy is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		p, free := f.proxy(teamID), f.proxy(teamID)
		f.createProxies(p, free)
		user := f.profile(teamID, "uses it")
		user.ProxyID = p.ID
		// A profile of another team naming the free proxy's id does not hold it.
		stray := f.profile(storeID("tm"), "another team")
		stray.ProxyID = free.ID
		f.createProfiles(user, stray)
		if err := f.s.Proxies().Delete(f.ctx, teamID, p.ID); !errors.Is(err, proxy.ErrInUse) {
			t.Errorf("Delete of a proxy in use: %v, want the domain's proxy.ErrInUse", err)
		}
		f.expectProxy(f.ctx, p)
		f.must("Delete of a free proxy", f.s.Proxies().Delete(f.ctx, teamID, free.ID))
		_, err := f.s.Proxies().ByID(f.ctx, teamID, free.ID)
		expectNotFound(t, "ByID after Delete", err)
		f.must("Delete the profile", f.s.Profiles().Delete(f.ctx, teamID, user.ID))
		f.must("Delete once unused", f.s.Proxies().Delete(f.ctx, teamID, p.ID))
	})

	t.Run("a unit that rolls back leaves no proxy", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.proxy(storeID("tm"))
		err := f.s.Do(f.ctx, func(ctx context.Context) error {
			if err := f.s.Proxies().Create(ctx, p); err != nil {
				return err
			}
			return context.Canceled
		})
		if err == nil {
			t.Fatal("the unit returned no error")
		}
		_, err = f.s.Proxies().ByID(f.ctx, p.TeamID, p.ID)
		expectNotFound(t, "ByID after a rolled back Create", err)
	})
}
