package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// swapRaces is how many goroutines race to start a session on one profile.
const swapRaces = 50

// runProfileSessions checks SwapSession, writes in a unit of work (a swap
// among them), ListExpiredSessions and CountSessions.
func runProfileSessions(t *testing.T, newStore NewStore) {
	t.Run("SwapSession compares and sets the session", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Leased", "a")
		f.createProfiles(p)
		repo := f.s.Profiles()
		swap := func(what string, s profilestore.SessionSwap, wantOK bool) {
			t.Helper()
			ok, err := repo.SwapSession(f.ctx, p.TeamID, p.ID, s)
			f.must(what, err)
			if ok != wantOK {
				t.Fatalf("%s: applied = %v, want %v", what, ok, wantOK)
			}
		}
		want := p

		first := f.session(storeAt(time.Minute).In(storeZone), time.Hour)
		swap("start", profilestore.SessionSwap{Next: first}, true)
		want.Session = first
		f.expectProfile(f.ctx, want)

		second := f.session(storeAt(time.Minute), time.Hour)
		second.Headless, second.CDPURL = false, ""
		swap("start again while running", profilestore.SessionSwap{Next: second}, false)
		swap("swap expecting another session", profilestore.SessionSwap{ExpectSessionID: second.ID, Next: second}, false)
		f.expectProfile(f.ctx, want)

		// A heartbeat extends the lease of the session the profile holds.
		beat := *first
		beat.ExpiresAt = first.ExpiresAt.Add(time.Hour)
		swap("heartbeat", profilestore.SessionSwap{ExpectSessionID: first.ID, Next: &beat}, true)
		want.Session = &beat
		f.expectProfile(f.ctx, want)

		// A reaper only ends a lease that expired by its clock.
		early := beat.ExpiresAt.Add(-time.Second)
		swap("reap before expiry", profilestore.SessionSwap{ExpectSessionID: first.ID, ExpiredBy: &early}, false)
		f.expectProfile(f.ctx, want)
		atExpiry := beat.ExpiresAt.In(storeZone)
		swap("reap at expiry", profilestore.SessionSwap{ExpectSessionID: first.ID, ExpiredBy: &atExpiry}, true)
		want.Session = nil
		f.expectProfile(f.ctx, want)
		swap("end an ended session", profilestore.SessionSwap{ExpectSessionID: first.ID}, false)
		swap("reap an idle profile", profilestore.SessionSwap{ExpiredBy: &atExpiry, Next: second}, false)
		f.expectProfile(f.ctx, want)

		// A session without headless mode or DevTools URL round-trips too.
		swap("start a headed session", profilestore.SessionSwap{Next: second}, true)
		want.Session = second
		f.expectProfile(f.ctx, want)
	})

	t.Run("SwapSession of a missing or another team's profile is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Mine")
		f.createProfiles(p)
		ok, err := f.s.Profiles().SwapSession(f.ctx, storeID("tm"), p.ID, profilestore.SessionSwap{Next: f.session(storeAt(0), time.Hour)})
		expectNotFound(t, "SwapSession from another team", err)
		if ok {
			t.Error("SwapSession from another team reported applied")
		}
		_, err = f.s.Profiles().SwapSession(f.ctx, p.TeamID, storeID("prf"), profilestore.SessionSwap{Next: f.session(storeAt(0), time.Hour)})
		expectNotFound(t, "SwapSession of an unknown id", err)
		f.expectProfile(f.ctx, p)
	})

	t.Run("concurrent SwapSession: exactly one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Contended")
		f.createProfiles(p)
		sessions := make([]*profile.Session, swapRaces)
		for i := range sessions {
			sessions[i] = f.session(storeAt(time.Minute), time.Hour)
		}
		applied := make([]bool, swapRaces)
		storeWithin(t, "concurrent SwapSession", func() {
			errs := runConcurrently(swapRaces, func(i int) error {
				ok, err := f.s.Profiles().SwapSession(f.ctx, p.TeamID, p.ID, profilestore.SessionSwap{Next: sessions[i]})
				applied[i] = ok // each goroutine writes its own element
				return err
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("swap %d: %v", i, err)
				}
			}
		})
		winners := []int{}
		for i, ok := range applied {
			if ok {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("swaps %v of %d applied, want exactly one", winners, swapRaces)
		}
		want := p
		want.Session = sessions[winners[0]]
		f.expectProfile(f.ctx, want)
	})

	t.Run("writes inside a unit of work commit or roll back with it", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		leased := f.profile(teamID, "Leased", "a")
		edited := f.profile(teamID, "Edited", "a", "b")
		doomed := f.profile(teamID, "Doomed", "c")
		f.createProfiles(leased, edited, doomed)
		created := f.profile(teamID, "Created", "d")
		s := f.session(storeAt(0), time.Hour)
		next := edited
		next.Name, next.Tags, next.Version, next.UpdatedAt = "Edited twice", []string{"z"}, 2, storeAt(time.Hour)

		write := func(ctx context.Context, tx storage.Store) error {
			ok, err := tx.Profiles().SwapSession(ctx, teamID, leased.ID, profilestore.SessionSwap{Next: s})
			if err != nil || !ok {
				return fmt.Errorf("swap: %v, %w", ok, err)
			}
			if err := tx.Profiles().Update(ctx, next, 1); err != nil {
				return fmt.Errorf("update: %w", err)
			}
			if err := tx.Profiles().Delete(ctx, teamID, doomed.ID); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
			_, err = tx.Profiles().Create(ctx, created)
			return err
		}
		wantLeased := leased
		wantLeased.Session = s

		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := write(ctx, tx); err != nil {
				return err
			}
			// The unit reads its own writes.
			f.expectProfile(ctx, wantLeased)
			f.expectProfile(ctx, next)
			f.expectProfile(ctx, created)
			_, err := tx.Profiles().ByID(ctx, teamID, doomed.ID)
			expectNotFound(t, "deleted profile inside the unit", err)
			running, err := tx.Profiles().List(ctx, teamID, profilestore.Filter{Status: profile.StatusRunning, Limit: 10})
			if err != nil {
				return err
			}
			checkIDs(t, "running profiles inside the unit", profileIDs(running), []string{leased.ID})
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do returned %v, want the error fn returned", err)
		}
		f.expectProfile(f.ctx, leased)
		f.expectProfile(f.ctx, edited)
		f.expectProfile(f.ctx, doomed)
		_, err = f.s.Profiles().ByID(f.ctx, teamID, created.ID)
		expectNotFound(t, "profile created in a failed unit", err)
		checkIDs(t, "profiles after the failed unit", profileIDs(f.list(teamID, profilestore.Filter{Limit: 10})), reversed(leased, edited, doomed))
		checkIDs(t, "profiles tagged c after the failed unit", profileIDs(f.list(teamID, profilestore.Filter{Tag: "c", Limit: 10})), []string{doomed.ID})

		f.must("Do", inUnit(f.ctx, f.s, write))
		f.expectProfile(f.ctx, wantLeased)
		f.expectProfile(f.ctx, next)
		f.expectProfile(f.ctx, created)
		_, err = f.s.Profiles().ByID(f.ctx, teamID, doomed.ID)
		expectNotFound(t, "profile deleted in a committed unit", err)
	})

	t.Run("ListExpiredSessions spans teams, earliest expiry first", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		now := storeAt(24 * time.Hour)
		teamA, teamB := storeID("tm"), storeID("tm")
		long := f.profile(teamA, "Expired long ago", "a", "b")
		long.Data = &profile.Data{Content: *f.content(99), UpdatedAt: storeAt(time.Hour)}
		long.Cookies = f.content(98)
		atNow := f.profile(teamB, "Expires now", "c")
		tied := f.profile(teamB, "Expired long ago too")
		later := f.profile(teamA, "Expires a millisecond later")
		idle := f.profile(teamB, "Idle")
		f.createProfiles(long, atNow, tied, later, idle)
		sessions := map[string]*profile.Session{
			long.ID:  f.session(now.Add(-3*time.Hour), time.Hour),
			atNow.ID: f.session(now.Add(-time.Hour), time.Hour),
			tied.ID:  f.session(now.Add(-3*time.Hour), time.Hour),
			later.ID: f.session(now.Add(-time.Hour), time.Hour+time.Millisecond),
		}
		sessions[atNow.ID].Headless = false
		for _, p := range []profile.Profile{atNow, later, tied, long} {
			f.start(p, sessions[p.ID])
		}

		got, err := f.s.Profiles().ListExpiredSessions(f.ctx, now.In(storeZone), 10)
		f.must("ListExpiredSessions", err)
		checkIDs(t, "expired sessions", profileIDs(got), []string{long.ID, tied.ID, atNow.ID})
		for _, g := range got {
			for _, p := range []profile.Profile{long, tied, atNow} {
				if g.ID == p.ID {
					p.Session = sessions[p.ID]
					checkEqual(t, "profile", g, p)
				}
			}
		}
		got, err = f.s.Profiles().ListExpiredSessions(f.ctx, now, 2)
		f.must("ListExpiredSessions with a limit", err)
		checkIDs(t, "first two expired sessions", profileIDs(got), []string{long.ID, tied.ID})
		got, err = f.s.Profiles().ListExpiredSessions(f.ctx, now.Add(-4*time.Hour), 10)
		f.must("ListExpiredSessions before any expiry", err)
		checkIDs(t, "sessions expired before any expiry", profileIDs(got), nil)
		got, err = f.s.Profiles().ListExpiredSessions(f.ctx, now.Add(time.Millisecond), 10)
		f.must("ListExpiredSessions a millisecond later", err)
		checkIDs(t, "sessions expired a millisecond later", profileIDs(got), []string{long.ID, tied.ID, atNow.ID, later.ID})
	})

	t.Run("CountSessions counts the sessions of every team not expired by now", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		now := storeAt(24 * time.Hour)
		teamA, teamB := storeID("tm"), storeID("tm")
		expired := f.profile(teamA, "Expired")
		atNow := f.profile(teamB, "Expires now")
		later := f.profile(teamA, "Expires a millisecond later")
		other := f.profile(teamB, "Expires in an hour")
		idle := f.profile(teamB, "Idle")
		f.createProfiles(expired, atNow, later, other, idle)
		f.start(expired, f.session(now.Add(-3*time.Hour), time.Hour))
		f.start(atNow, f.session(now.Add(-time.Hour), time.Hour))
		f.start(later, f.session(now.Add(-time.Hour), time.Hour+time.Millisecond))
		f.start(other, f.session(now, time.Hour))
		for _, c := range []struct {
			at   time.Time
			want int
		}{
			{now.Add(-4 * time.Hour), 4},
			{now.In(storeZone), 2},
			{now.Add(time.Millisecond), 1},
			{now.Add(time.Hour), 0},
		} {
			n, err := f.s.Profiles().CountSessions(f.ctx, c.at)
			f.must("CountSessions", err)
			if n != c.want {
				t.Errorf("sessions running at %v: %d, want %d", c.at.Sub(now), n, c.want)
			}
		}
	})
}
