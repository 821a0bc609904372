package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

func expectPreconditionFailed(t *testing.T, what string, err error) {
	t.Helper()
	expectKind(t, what, err, domain.KindPreconditionFailed, "precondition-failed")
}

// runProfileUpdatesAndDeletes checks Update, UpdateIdle and Delete.
func runProfileUpdatesAndDeletes(t *testing.T, newStore NewStore) {
	t.Run("Update replaces the settings and keeps the session", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Before", "a", "b", "c")
		p.ProxyID = storeID("prx")
		sibling := f.profile(p.TeamID, "Sibling", "a", "b")
		f.createProfiles(p, sibling)
		s := f.session(storeAt(time.Minute), time.Hour)
		f.start(p, s)

		next := p
		next.Name = "After"
		next.TemplateID = "tpl_chrome_mac_fr"
		next.Browser = "chromium-next"
		next.Fingerprint = macDevice()
		next.ProxyID = ""
		next.Tags = []string{"c", "new", "a"}
		next.Notes = "changed"
		next.Data = &profile.Data{Content: *f.content(1 << 40), UpdatedAt: storeAt(2 * time.Hour).In(storeZone)}
		next.Cookies = f.content(77)
		next.Version = 2
		next.UpdatedAt = storeAt(2 * time.Hour).In(storeZone)
		// Neither the session nor the creation is Update's to change.
		next.Session = f.session(storeAt(3*time.Hour), time.Minute)
		next.CreatedBy = storeID("usr")
		next.CreatedAt = storeAt(4 * time.Hour)
		f.must("Update", f.s.Profiles().Update(f.ctx, next, 1))

		want := next
		want.Session, want.CreatedBy, want.CreatedAt = s, p.CreatedBy, p.CreatedAt
		f.expectProfile(f.ctx, want)
		f.expectProfile(f.ctx, sibling)
		checkIDs(t, "profiles tagged b", profileIDs(f.list(p.TeamID, profilestore.Filter{Tag: "b", Limit: 10})), []string{sibling.ID})
		checkIDs(t, "profiles tagged new", profileIDs(f.list(p.TeamID, profilestore.Filter{Tag: "new", Limit: 10})), []string{p.ID})

		// The session can still be ended after the update.
		ok, err := f.s.Profiles().SwapSession(f.ctx, p.TeamID, p.ID, profilestore.SessionSwap{ExpectSessionID: s.ID})
		f.must("end session", err)
		if !ok {
			t.Fatal("ending the session after an update did not apply")
		}
		last := want
		last.Tags, last.Version, last.Session = nil, 3, nil
		last.Data, last.Cookies = nil, nil
		f.must("Update to no tags, data or cookies", f.s.Profiles().Update(f.ctx, last, 2))
		last.Tags = []string{}
		f.expectProfile(f.ctx, last)
	})

	t.Run("Update with a stale version is a precondition failure", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Versioned", "a")
		p.Version = 3
		f.createProfiles(p)
		for _, expect := range []int{2, 4} {
			next := p
			next.Name, next.Tags, next.Version, next.UpdatedAt = "Lost", []string{"b"}, expect+1, storeAt(time.Hour)
			expectPreconditionFailed(t, fmt.Sprintf("Update expecting version %d", expect), f.s.Profiles().Update(f.ctx, next, expect))
		}
		f.expectProfile(f.ctx, p)
	})

	t.Run("Update of a missing or another team's profile is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Mine", "a")
		f.createProfiles(p)
		stranger := p
		stranger.TeamID, stranger.Name, stranger.Tags, stranger.Version = storeID("tm"), "Theirs", []string{"b"}, 2
		expectNotFound(t, "Update from another team", f.s.Profiles().Update(f.ctx, stranger, 1))
		missing := f.profile(p.TeamID, "Missing")
		expectNotFound(t, "Update of an unknown id", f.s.Profiles().Update(f.ctx, missing, 1))
		f.expectProfile(f.ctx, p)
		_, err := f.s.Profiles().ByID(f.ctx, stranger.TeamID, p.ID)
		expectNotFound(t, "profile after an Update from another team", err)
	})

	t.Run("UpdateIdle replaces an idle profile's settings, data and cookies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Before", "a", "b")
		p.Cookies = f.content(5)
		f.createProfiles(p)

		next := p
		next.Name, next.Tags, next.Notes = "After", []string{"b", "new"}, "restored"
		next.Data = &profile.Data{Content: *f.content(4 << 20), UpdatedAt: storeAt(time.Hour).In(storeZone)}
		next.Cookies = f.content(6)
		next.Version, next.UpdatedAt = 2, storeAt(time.Hour).In(storeZone)
		next.CreatedAt = storeAt(5 * time.Hour)
		f.must("UpdateIdle", f.s.Profiles().UpdateIdle(f.ctx, next, 1))
		want := next
		want.CreatedAt = p.CreatedAt
		f.expectProfile(f.ctx, want)
		checkIDs(t, "profiles tagged new", profileIDs(f.list(p.TeamID, profilestore.Filter{Tag: "new", Limit: 10})), []string{p.ID})

		cleared := want
		cleared.Data, cleared.Cookies, cleared.Version = nil, nil, 3
		expectPreconditionFailed(t, "UpdateIdle expecting a stale version", f.s.Profiles().UpdateIdle(f.ctx, cleared, 1))
		f.expectProfile(f.ctx, want)
		f.must("UpdateIdle clearing data and cookies", f.s.Profiles().UpdateIdle(f.ctx, cleared, 2))
		f.expectProfile(f.ctx, cleared)
	})

	t.Run("UpdateIdle of a running profile is refused", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Running", "a")
		p.Data = &profile.Data{Content: *f.content(1), UpdatedAt: storeAt(0)}
		p.Version = 4
		f.createProfiles(p)
		s := f.session(storeAt(0), time.Hour)
		f.start(p, s)
		want := p
		want.Session = s

		next := p
		next.Name, next.Data, next.Cookies, next.Version = "Lost", nil, f.content(2), 5
		err := f.s.Profiles().UpdateIdle(f.ctx, next, 4)
		expectConflict(t, "UpdateIdle of a running profile", err)
		if !errors.Is(err, profile.ErrRunning) {
			t.Errorf("UpdateIdle of a running profile: %v, want profile.ErrRunning", err)
		}
		// The version is checked first.
		expectPreconditionFailed(t, "UpdateIdle of a running profile at another version", f.s.Profiles().UpdateIdle(f.ctx, next, 3))
		stranger := next
		stranger.TeamID = storeID("tm")
		expectNotFound(t, "UpdateIdle from another team", f.s.Profiles().UpdateIdle(f.ctx, stranger, 4))
		expectNotFound(t, "UpdateIdle of an unknown id", f.s.Profiles().UpdateIdle(f.ctx, f.profile(p.TeamID, "Missing"), 1))
		f.expectProfile(f.ctx, want)

		// Update does not mind the session.
		f.must("Update of a running profile", f.s.Profiles().Update(f.ctx, next, 4))
		want = next
		want.Session = s
		f.expectProfile(f.ctx, want)
	})

	t.Run("Delete removes an idle profile and its tags", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Doomed", "a", "b")
		keep := f.profile(p.TeamID, "Kept", "a")
		f.createProfiles(p, keep)
		f.must("Delete", f.s.Profiles().Delete(f.ctx, p.TeamID, p.ID))
		_, err := f.s.Profiles().ByID(f.ctx, p.TeamID, p.ID)
		expectNotFound(t, "ByID after Delete", err)
		expectNotFound(t, "second Delete", f.s.Profiles().Delete(f.ctx, p.TeamID, p.ID))
		checkIDs(t, "profiles after Delete", profileIDs(f.list(p.TeamID, profilestore.Filter{Limit: 10})), []string{keep.ID})
		checkIDs(t, "profiles tagged a", profileIDs(f.list(p.TeamID, profilestore.Filter{Tag: "a", Limit: 10})), []string{keep.ID})
		f.expectProfile(f.ctx, keep)

		// No tag outlives its profile: the id can be stored again afresh.
		again := f.profile(p.TeamID, "Again", "b", "c")
		again.ID = p.ID
		f.createProfiles(again)
		f.expectProfile(f.ctx, again)
	})

	t.Run("Delete of a running profile is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Busy", "a")
		f.createProfiles(p)
		s := f.session(storeAt(0), time.Hour)
		f.start(p, s)
		err := f.s.Profiles().Delete(f.ctx, p.TeamID, p.ID)
		expectConflict(t, "Delete of a running profile", err)
		want := p
		want.Session = s
		f.expectProfile(f.ctx, want)

		ok, err := f.s.Profiles().SwapSession(f.ctx, p.TeamID, p.ID, profilestore.SessionSwap{ExpectSessionID: s.ID})
		f.must("end session", err)
		if !ok {
			t.Fatal("ending the session did not apply")
		}
		f.must("Delete once idle", f.s.Profiles().Delete(f.ctx, p.TeamID, p.ID))
	})

	t.Run("Delete of a missing or another team's profile is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Mine", "a")
		f.createProfiles(p)
		expectNotFound(t, "Delete from another team", f.s.Profiles().Delete(f.ctx, storeID("tm"), p.ID))
		expectNotFound(t, "Delete of an unknown id", f.s.Profiles().Delete(f.ctx, p.TeamID, storeID("prf")))
		f.expectProfile(f.ctx, p)
	})
}
