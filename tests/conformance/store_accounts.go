package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// errRollback fails a unit of work on purpose.
var errRollback = errors.New("conformance: roll back")

// sortedIDs returns ids in byte order.
func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

func runUserRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID and ByEmail", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		u := f.user("Grace.Hopper+" + storeID("n") + "@Example.COM")
		if u.Email != account.NormalizeEmail(u.Email) {
			t.Fatalf("fixture: NewUser did not normalise %q", u.Email)
		}
		f.must("Create", f.s.Users().Create(f.ctx, u))

		got, err := f.s.Users().ByID(f.ctx, u.ID)
		f.must("ByID", err)
		checkEqual(t, "user", got, u)

		got, err = f.s.Users().ByEmail(f.ctx, u.Email)
		f.must("ByEmail", err)
		checkEqual(t, "user", got, u)
	})

	t.Run("missing user is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		f.must("Create", f.s.Users().Create(f.ctx, f.user("")))
		_, err := f.s.Users().ByID(f.ctx, storeID("usr"))
		expectNotFound(t, "ByID of an unknown id", err)
		_, err = f.s.Users().ByEmail(f.ctx, "nobody-"+storeID("n")+"@example.com")
		expectNotFound(t, "ByEmail of an unknown email", err)
	})

	t.Run("taken email is a conflict, whatever its case", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		first := f.user("dup-" + storeID("n") + "@example.com")
		f.must("Create first", f.s.Users().Create(f.ctx, first))

		same := f.user(first.Email)
		expectConflict(t, "Create with the same email", f.s.Users().Create(f.ctx, same))

		// Built without NewUser, so the store itself must compare emails
		// case-insensitively rather than rely on callers normalising.
		upper := f.user("")
		upper.Email = strings.ToUpper(first.Email)
		expectConflict(t, "Create with the same email in another case", f.s.Users().Create(f.ctx, upper))

		_, err := f.s.Users().ByID(f.ctx, same.ID)
		expectNotFound(t, "ByID of the refused user", err)
		got, err := f.s.Users().ByEmail(f.ctx, first.Email)
		f.must("ByEmail", err)
		checkEqual(t, "user", got, first)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		first := f.user("")
		f.must("Create first", f.s.Users().Create(f.ctx, first))
		again := f.user("")
		again.ID = first.ID
		expectConflict(t, "Create with the same id", f.s.Users().Create(f.ctx, again))
		_, err := f.s.Users().ByEmail(f.ctx, again.Email)
		expectNotFound(t, "ByEmail of the refused user", err)
	})

	t.Run("UpdatePassword changes the hash and UpdatedAt only", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		u := f.user("")
		other := f.user("")
		f.must("Create", f.s.Users().Create(f.ctx, u))
		f.must("Create other", f.s.Users().Create(f.ctx, other))

		at := storeAt(time.Hour).In(storeZone)
		f.must("UpdatePassword", f.s.Users().UpdatePassword(f.ctx, u.ID, "$argon2id$new", at))

		want := u
		want.PasswordHash = "$argon2id$new"
		want.UpdatedAt = at
		got, err := f.s.Users().ByID(f.ctx, u.ID)
		f.must("ByID", err)
		checkEqual(t, "user", got, want)

		got, err = f.s.Users().ByID(f.ctx, other.ID)
		f.must("ByID other", err)
		checkEqual(t, "user", got, other)
	})

	t.Run("UpdatePassword of a missing user is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		err := f.s.Users().UpdatePassword(f.ctx, storeID("usr"), "$argon2id$new", storeAt(0))
		expectNotFound(t, "UpdatePassword of an unknown id", err)
	})

	t.Run("ListByIDs returns the users that exist", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a, b, c := f.user(""), f.user(""), f.user("")
		for _, u := range []account.User{a, b, c} {
			f.must("Create", f.s.Users().Create(f.ctx, u))
		}
		got, err := f.s.Users().ListByIDs(f.ctx, []string{c.ID, storeID("usr"), a.ID, c.ID})
		f.must("ListByIDs", err)
		slices.SortFunc(got, func(x, y account.User) int { return strings.Compare(x.ID, y.ID) })
		checkIDs(t, "ListByIDs", ids(got, func(u account.User) string { return u.ID }), []string{a.ID, c.ID})
		if len(got) == 2 {
			checkEqual(t, "user", got[0], a)
			checkEqual(t, "user", got[1], c)
		}

		for _, none := range [][]string{nil, {}, {storeID("usr")}} {
			got, err := f.s.Users().ListByIDs(f.ctx, none)
			f.must("ListByIDs without known ids", err)
			if len(got) != 0 {
				t.Fatalf("ListByIDs(%q) returned %d users, want none", none, len(got))
			}
		}
	})

	t.Run("EndSessions raises the session version by one per call", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		u := f.user("")
		u.SessionVersion = 2
		other := f.user("")
		f.must("Create", f.s.Users().Create(f.ctx, u))
		f.must("Create other", f.s.Users().Create(f.ctx, other))
		got, err := f.s.Users().ByID(f.ctx, u.ID)
		f.must("ByID", err)
		checkEqual(t, "user", got, u)

		at := storeAt(time.Hour).In(storeZone)
		v, err := f.s.Users().EndSessions(f.ctx, u.ID, at)
		f.must("EndSessions", err)
		if v != 3 {
			t.Fatalf("EndSessions = %d, want 3", v)
		}
		const callers = 8
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() { _, errs[i] = f.s.Users().EndSessions(f.ctx, u.ID, at) })
		}
		wg.Wait()
		for _, err := range errs {
			f.must("concurrent EndSessions", err)
		}
		want := u
		want.SessionVersion, want.UpdatedAt = 3+callers, at.UTC()
		got, err = f.s.Users().ByID(f.ctx, u.ID)
		f.must("ByID after EndSessions", err)
		checkEqual(t, "user", got, want)
		got, err = f.s.Users().ByID(f.ctx, other.ID)
		f.must("ByID other", err)
		checkEqual(t, "other user", got, other)

		_, err = f.s.Users().EndSessions(f.ctx, storeID("usr"), at)
		expectNotFound(t, "EndSessions of a missing user", err)
	})

	t.Run("times written in another zone come back in UTC", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		u := f.user("")
		u.CreatedAt = storeAt(-time.Hour).In(storeZone)
		u.UpdatedAt = storeAt(-time.Minute).In(storeZone)
		f.must("Create", f.s.Users().Create(f.ctx, u))
		got, err := f.s.Users().ByID(f.ctx, u.ID)
		f.must("ByID", err)
		checkEqual(t, "user", got, u)
	})
}

func runTeamRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tm := f.team()
		other := f.team()
		f.must("Create", f.s.Teams().Create(f.ctx, tm))
		f.must("Create other", f.s.Teams().Create(f.ctx, other))
		got, err := f.s.Teams().ByID(f.ctx, tm.ID)
		f.must("ByID", err)
		checkEqual(t, "team", got, tm)
	})

	t.Run("missing team is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, err := f.s.Teams().ByID(f.ctx, storeID("tm"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tm := f.team()
		f.must("Create", f.s.Teams().Create(f.ctx, tm))
		again := tm
		again.Name = "Another name"
		expectConflict(t, "Create with the same id", f.s.Teams().Create(f.ctx, again))
		got, err := f.s.Teams().ByID(f.ctx, tm.ID)
		f.must("ByID", err)
		checkEqual(t, "team", got, tm)
	})
}

func runMembershipRepository(t *testing.T, newStore NewStore) {
	t.Run("owner round trip with JoinedAt", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := team.NewOwner(storeID("mem"), storeID("tm"), storeID("usr"), "owner@example.com", storeAt(time.Second))
		f.must("Create", f.s.Memberships().Create(f.ctx, m))
		got, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, m.UserID)
		f.must("ByUser", err)
		checkEqual(t, "member", got, m)
		if got.JoinedAt == nil {
			t.Fatal("JoinedAt came back nil")
		}
	})

	t.Run("invited member round trip without JoinedAt", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := team.Member{ID: storeID("mem"), TeamID: storeID("tm"), UserID: storeID("usr"), Email: "guest@example.com",
			Role: team.RoleViewer, Status: team.StatusInvited, InvitedAt: storeAt(time.Minute).In(storeZone)}
		f.must("Create", f.s.Memberships().Create(f.ctx, m))
		got, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, m.UserID)
		f.must("ByUser", err)
		checkEqual(t, "member", got, m)
	})

	t.Run("ByUser is scoped by team and user", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := team.NewOwner(storeID("mem"), storeID("tm"), storeID("usr"), "a@example.com", storeAt(0))
		f.must("Create", f.s.Memberships().Create(f.ctx, m))
		_, err := f.s.Memberships().ByUser(f.ctx, storeID("tm"), m.UserID)
		expectNotFound(t, "ByUser in another team", err)
		_, err = f.s.Memberships().ByUser(f.ctx, m.TeamID, storeID("usr"))
		expectNotFound(t, "ByUser of another user", err)
	})

	t.Run("second membership of a user in a team is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := team.NewOwner(storeID("mem"), storeID("tm"), storeID("usr"), "a@example.com", storeAt(0))
		f.must("Create", f.s.Memberships().Create(f.ctx, m))
		again := team.NewOwner(storeID("mem"), m.TeamID, m.UserID, "a@example.com", storeAt(time.Hour))
		expectConflict(t, "Create for the same team and user", f.s.Memberships().Create(f.ctx, again))

		sameID := team.NewOwner(m.ID, storeID("tm"), storeID("usr"), "b@example.com", storeAt(0))
		expectConflict(t, "Create with the same id", f.s.Memberships().Create(f.ctx, sameID))

		got, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, m.UserID)
		f.must("ByUser", err)
		checkEqual(t, "member", got, m)
	})

	// Oldest means earliest InvitedAt; ids and insertion order are made to
	// disagree with it so that neither can pass for it.
	t.Run("ListByUser returns every team's membership, oldest first", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		userID := storeID("usr")
		newest := team.NewOwner(storeID("mem"), storeID("tm"), userID, "u@example.com", storeAt(3*time.Hour))
		oldest := team.Member{ID: storeID("mem"), TeamID: storeID("tm"), UserID: userID, Email: "u@example.com",
			Role: team.RoleMember, Status: team.StatusInvited, InvitedAt: storeAt(time.Hour)}
		middle := team.NewOwner(storeID("mem"), storeID("tm"), userID, "u@example.com", storeAt(2*time.Hour))
		stranger := team.NewOwner(storeID("mem"), oldest.TeamID, storeID("usr"), "s@example.com", storeAt(0))
		for _, m := range []team.Member{newest, oldest, stranger, middle} {
			f.must("Create", f.s.Memberships().Create(f.ctx, m))
		}

		got, err := f.s.Memberships().ListByUser(f.ctx, userID)
		f.must("ListByUser", err)
		checkIDs(t, "ListByUser", ids(got, func(m team.Member) string { return m.ID }), []string{oldest.ID, middle.ID, newest.ID})
		if len(got) == 3 {
			checkEqual(t, "member", got[0], oldest)
			checkEqual(t, "member", got[2], newest)
		}

		none, err := f.s.Memberships().ListByUser(f.ctx, storeID("usr"))
		f.must("ListByUser of a user without teams", err)
		if len(none) != 0 {
			t.Fatalf("ListByUser of a user without teams: got %d memberships", len(none))
		}
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := team.NewOwner(storeID("mem"), storeID("tm"), storeID("usr"), "a@example.com", storeAt(0))
		want := m
		want.JoinedAt = storePtr(*m.JoinedAt)
		f.must("Create", f.s.Memberships().Create(f.ctx, m))
		*m.JoinedAt = storeAt(99 * time.Hour)

		got, err := f.s.Memberships().ByUser(f.ctx, want.TeamID, want.UserID)
		f.must("ByUser", err)
		*got.JoinedAt = storeAt(98 * time.Hour)
		list, err := f.s.Memberships().ListByUser(f.ctx, want.UserID)
		f.must("ListByUser", err)
		*list[0].JoinedAt = storeAt(97 * time.Hour)

		got, err = f.s.Memberships().ByUser(f.ctx, want.TeamID, want.UserID)
		f.must("ByUser", err)
		checkEqual(t, "member", got, want)
	})
}

func runAPIKeyRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := f.apiKey(storeID("tm"), storeID("usr"), storeAt(time.Minute).In(storeZone))
		used := f.apiKey(k.TeamID, k.UserID, storeAt(2*time.Minute))
		used.Hash = storeHash(200)
		used.LastUsedAt = storePtr(storeAt(3 * time.Minute))
		f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		f.must("Create used", f.s.APIKeys().Create(f.ctx, used))

		got, err := f.s.APIKeys().ByID(f.ctx, k.ID)
		f.must("ByID", err)
		checkEqual(t, "apikey", got, k)
		got, err = f.s.APIKeys().ByID(f.ctx, used.ID)
		f.must("ByID used", err)
		checkEqual(t, "apikey", got, used)
	})

	t.Run("missing key is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, err := f.s.APIKeys().ByID(f.ctx, storeID("key"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := f.apiKey(storeID("tm"), storeID("usr"), storeAt(0))
		f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		again := f.apiKey(k.TeamID, k.UserID, storeAt(time.Hour))
		again.ID = k.ID
		expectConflict(t, "Create with the same id", f.s.APIKeys().Create(f.ctx, again))
	})

	t.Run("ListByUser is scoped by team and user, newest first", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, userID := storeID("tm"), storeID("usr")
		// Ids and insertion order disagree with CreatedAt on purpose.
		middle := f.apiKey(teamID, userID, storeAt(2*time.Hour))
		newest := f.apiKey(teamID, userID, storeAt(3*time.Hour))
		oldest := f.apiKey(teamID, userID, storeAt(1*time.Hour))
		otherTeam := f.apiKey(storeID("tm"), userID, storeAt(4*time.Hour))
		otherUser := f.apiKey(teamID, storeID("usr"), storeAt(5*time.Hour))
		for _, k := range []account.APIKey{oldest, otherTeam, newest, otherUser, middle} {
			f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		}

		got, err := f.s.APIKeys().ListByUser(f.ctx, teamID, userID)
		f.must("ListByUser", err)
		checkIDs(t, "ListByUser", ids(got, func(k account.APIKey) string { return k.ID }), []string{newest.ID, middle.ID, oldest.ID})
		if len(got) == 3 {
			checkEqual(t, "apikey", got[0], newest)
		}

		none, err := f.s.APIKeys().ListByUser(f.ctx, storeID("tm"), userID)
		f.must("ListByUser in a team without keys", err)
		if len(none) != 0 {
			t.Fatalf("ListByUser in a team without keys: got %d keys", len(none))
		}
	})

	t.Run("Delete is scoped by team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := f.apiKey(storeID("tm"), storeID("usr"), storeAt(0))
		keep := f.apiKey(k.TeamID, k.UserID, storeAt(time.Second))
		f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		f.must("Create keep", f.s.APIKeys().Create(f.ctx, keep))

		expectNotFound(t, "Delete with another team", f.s.APIKeys().Delete(f.ctx, storeID("tm"), k.ID))
		got, err := f.s.APIKeys().ByID(f.ctx, k.ID)
		f.must("ByID after Delete with another team", err)
		checkEqual(t, "apikey", got, k)

		f.must("Delete", f.s.APIKeys().Delete(f.ctx, k.TeamID, k.ID))
		_, err = f.s.APIKeys().ByID(f.ctx, k.ID)
		expectNotFound(t, "ByID after Delete", err)
		expectNotFound(t, "second Delete", f.s.APIKeys().Delete(f.ctx, k.TeamID, k.ID))

		list, err := f.s.APIKeys().ListByUser(f.ctx, k.TeamID, k.UserID)
		f.must("ListByUser", err)
		checkIDs(t, "ListByUser after Delete", ids(list, func(k account.APIKey) string { return k.ID }), []string{keep.ID})
	})

	t.Run("DeleteByUser and DeleteByMember return the ids they deleted", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, otherTeam, userID, otherUser := storeID("tm"), storeID("tm"), storeID("usr"), storeID("usr")
		a := f.apiKey(teamID, userID, storeAt(0))
		b := f.apiKey(teamID, userID, storeAt(time.Second))
		elsewhere := f.apiKey(otherTeam, userID, storeAt(0))
		someoneElse := f.apiKey(teamID, otherUser, storeAt(0))
		for _, k := range []account.APIKey{b, elsewhere, a, someoneElse} {
			f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		}

		// A unit that fails deletes nothing.
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if _, err := tx.APIKeys().DeleteByMember(ctx, teamID, userID); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("unit: %v", err)
		}
		_, err = f.s.APIKeys().ByID(f.ctx, a.ID)
		f.must("ByID after a rolled-back DeleteByMember", err)

		got, err := f.s.APIKeys().DeleteByMember(f.ctx, teamID, userID)
		f.must("DeleteByMember", err)
		checkIDs(t, "DeleteByMember", got, sortedIDs(a.ID, b.ID))
		for _, k := range []account.APIKey{elsewhere, someoneElse} {
			_, err := f.s.APIKeys().ByID(f.ctx, k.ID)
			f.must("ByID of a key of another team or user", err)
		}
		again, err := f.s.APIKeys().DeleteByMember(f.ctx, teamID, userID)
		f.must("second DeleteByMember", err)
		if len(again) != 0 {
			t.Fatalf("second DeleteByMember = %v, want none", again)
		}

		got, err = f.s.APIKeys().DeleteByUser(f.ctx, userID)
		f.must("DeleteByUser", err)
		checkIDs(t, "DeleteByUser", got, []string{elsewhere.ID})
		_, err = f.s.APIKeys().ByID(f.ctx, someoneElse.ID)
		f.must("ByID of another user's key", err)
	})

	t.Run("Touch records the last use and never goes back", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := f.apiKey(storeID("tm"), storeID("usr"), storeAt(0))
		other := f.apiKey(k.TeamID, k.UserID, storeAt(0))
		f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		f.must("Create", f.s.APIKeys().Create(f.ctx, other))
		lastUse := func() *time.Time {
			t.Helper()
			got, err := f.s.APIKeys().ByID(f.ctx, k.ID)
			f.must("ByID", err)
			return got.LastUsedAt
		}
		if got := lastUse(); got != nil {
			t.Fatalf("a new key was used at %v", got)
		}
		for _, c := range []struct {
			at, want time.Duration
		}{
			{2 * time.Minute, 2 * time.Minute},
			{time.Minute + time.Millisecond, 2 * time.Minute},
			{2*time.Minute + time.Millisecond, 2*time.Minute + time.Millisecond},
		} {
			f.must("Touch", f.s.APIKeys().Touch(f.ctx, k.ID, storeAt(c.at).In(storeZone)))
			// Stores keep microseconds.
			if got := lastUse(); got == nil || !got.Truncate(time.Microsecond).Equal(storeAt(c.want).Truncate(time.Microsecond)) {
				t.Fatalf("after a use at %v: last used at %v, want %v", c.at, got, storeAt(c.want))
			}
		}
		untouched, err := f.s.APIKeys().ByID(f.ctx, other.ID)
		f.must("ByID", err)
		if untouched.LastUsedAt != nil {
			t.Fatalf("another key was marked used at %v", untouched.LastUsedAt)
		}
		f.must("Touch of a key that does not exist", f.s.APIKeys().Touch(f.ctx, storeID("key"), storeAt(time.Hour)))
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := f.apiKey(storeID("tm"), storeID("usr"), storeAt(0))
		k.LastUsedAt = storePtr(storeAt(time.Second))
		want := k
		want.Hash = append([]byte(nil), k.Hash...)
		want.LastUsedAt = storePtr(*k.LastUsedAt)
		f.must("Create", f.s.APIKeys().Create(f.ctx, k))
		k.Hash[0] ^= 0xff
		*k.LastUsedAt = storeAt(99 * time.Hour)

		got, err := f.s.APIKeys().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		got.Hash[0] ^= 0xff
		*got.LastUsedAt = storeAt(98 * time.Hour)
		list, err := f.s.APIKeys().ListByUser(f.ctx, want.TeamID, want.UserID)
		f.must("ListByUser", err)
		list[0].Hash[1] ^= 0xff

		got, err = f.s.APIKeys().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		checkEqual(t, "apikey", got, want)
	})
}
