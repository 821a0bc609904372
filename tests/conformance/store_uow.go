package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// unitRows is one row of every kind, as a sign-up writes them.
type unitRows struct {
	user    account.User
	team    team.Team
	member  team.Member
	invite  team.Invitation
	key     account.APIKey
	refresh account.RefreshToken
	reset   account.ResetToken
	event   event.Event
}

func (f storeFixture) unitRows() unitRows {
	f.t.Helper()
	u := f.user("")
	tm := f.team()
	u.DefaultTeamID = tm.ID
	member := team.NewOwner(storeID("mem"), tm.ID, u.ID, u.Email, storeAt(0))
	return unitRows{
		user:    u,
		team:    tm,
		member:  member,
		invite:  f.invitation(tm.ID, member.ID, u.Email),
		key:     f.apiKey(tm.ID, u.ID, storeAt(0)),
		refresh: f.refreshToken(storeID("fam"), u.ID, tm.ID),
		reset:   f.resetToken(u.ID),
		event:   f.event(tm.ID, storeAt(0)),
	}
}

// write stores every row through r, stopping at the first error.
func (w unitRows) write(ctx context.Context, r storage.Store) error {
	steps := []struct {
		what string
		do   func() error
	}{
		{"create user", func() error { return r.Users().Create(ctx, w.user) }},
		{"create team", func() error { return r.Teams().Create(ctx, w.team) }},
		{"create membership", func() error { return r.Memberships().Create(ctx, w.member) }},
		{"create invitation", func() error { return r.Invitations().Create(ctx, w.invite) }},
		{"create api key", func() error { return r.APIKeys().Create(ctx, w.key) }},
		{"create refresh token", func() error { return r.RefreshTokens().Create(ctx, w.refresh) }},
		{"create reset token", func() error { return r.ResetTokens().Create(ctx, w.reset) }},
		{"append event", func() error { return r.Outbox().Append(ctx, w.event) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// expectPresent reads every row back through r and compares it.
func (w unitRows) expectPresent(t *testing.T, ctx context.Context, r storage.Store) {
	t.Helper()
	u, err := r.Users().ByID(ctx, w.user.ID)
	if err != nil {
		t.Fatalf("user %s: %v", w.user.ID, err)
	}
	checkEqual(t, "user", u, w.user)
	if _, err := r.Users().ByEmail(ctx, w.user.Email); err != nil {
		t.Fatalf("user by email %s: %v", w.user.Email, err)
	}
	tm, err := r.Teams().ByID(ctx, w.team.ID)
	if err != nil {
		t.Fatalf("team %s: %v", w.team.ID, err)
	}
	checkEqual(t, "team", tm, w.team)
	m, err := r.Memberships().ByUser(ctx, w.team.ID, w.user.ID)
	if err != nil {
		t.Fatalf("membership: %v", err)
	}
	checkEqual(t, "member", m, w.member)
	if m, err = r.Memberships().ByID(ctx, w.team.ID, w.member.ID); err != nil {
		t.Fatalf("membership by id: %v", err)
	}
	checkEqual(t, "member", m, w.member)
	if m, err = r.Memberships().ByEmail(ctx, w.team.ID, w.member.Email); err != nil {
		t.Fatalf("membership by email: %v", err)
	}
	checkEqual(t, "member", m, w.member)
	list, err := r.Memberships().List(ctx, w.team.ID, "", 10)
	if err != nil {
		t.Fatalf("list memberships: %v", err)
	}
	checkIDs(t, "memberships of the team", memberIDs(list), []string{w.member.ID})
	if active, owners, err := r.Memberships().Count(ctx, w.team.ID); err != nil || active != 1 || owners != 1 {
		t.Fatalf("Count = %d active, %d owners, %v; want 1, 1", active, owners, err)
	}
	inv, err := r.Invitations().ByID(ctx, w.invite.ID)
	if err != nil {
		t.Fatalf("invitation %s: %v", w.invite.ID, err)
	}
	checkEqual(t, "invitation", inv, w.invite)
	k, err := r.APIKeys().ByID(ctx, w.key.ID)
	if err != nil {
		t.Fatalf("api key %s: %v", w.key.ID, err)
	}
	checkEqual(t, "apikey", k, w.key)
	rt, err := r.RefreshTokens().ByID(ctx, w.refresh.ID)
	if err != nil {
		t.Fatalf("refresh token %s: %v", w.refresh.ID, err)
	}
	checkEqual(t, "refresh", rt, w.refresh)
	st, err := r.ResetTokens().ByID(ctx, w.reset.ID)
	if err != nil {
		t.Fatalf("reset token %s: %v", w.reset.ID, err)
	}
	checkEqual(t, "reset", st, w.reset)
	events, err := r.Outbox().ListAfter(ctx, "", 1000)
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	for _, e := range events {
		if e.ID == w.event.ID {
			checkEqual(t, "event", e, w.event)
			return
		}
	}
	t.Fatalf("event %s not in the outbox %v", w.event.ID, eventIDs(events))
}

// expectAbsent checks through r that none of the rows exists.
func (w unitRows) expectAbsent(t *testing.T, ctx context.Context, r storage.Store) {
	t.Helper()
	_, err := r.Users().ByID(ctx, w.user.ID)
	expectNotFound(t, "user left behind", err)
	_, err = r.Users().ByEmail(ctx, w.user.Email)
	expectNotFound(t, "user email left behind", err)
	_, err = r.Teams().ByID(ctx, w.team.ID)
	expectNotFound(t, "team left behind", err)
	_, err = r.Memberships().ByUser(ctx, w.team.ID, w.user.ID)
	expectNotFound(t, "membership left behind", err)
	ms, err := r.Memberships().ListByUser(ctx, w.user.ID)
	if err != nil || len(ms) != 0 {
		t.Fatalf("memberships left behind: %d, %v", len(ms), err)
	}
	_, err = r.Memberships().ByID(ctx, w.team.ID, w.member.ID)
	expectNotFound(t, "membership by id left behind", err)
	_, err = r.Memberships().ByEmail(ctx, w.team.ID, w.member.Email)
	expectNotFound(t, "membership by email left behind", err)
	ms, err = r.Memberships().List(ctx, w.team.ID, "", 10)
	if err != nil || len(ms) != 0 {
		t.Fatalf("memberships of the team left behind: %d, %v", len(ms), err)
	}
	if active, owners, err := r.Memberships().Count(ctx, w.team.ID); err != nil || active != 0 || owners != 0 {
		t.Fatalf("Count = %d active, %d owners, %v; want 0, 0", active, owners, err)
	}
	_, err = r.Invitations().ByID(ctx, w.invite.ID)
	expectNotFound(t, "invitation left behind", err)
	_, err = r.APIKeys().ByID(ctx, w.key.ID)
	expectNotFound(t, "api key left behind", err)
	_, err = r.RefreshTokens().ByID(ctx, w.refresh.ID)
	expectNotFound(t, "refresh token left behind", err)
	_, err = r.ResetTokens().ByID(ctx, w.reset.ID)
	expectNotFound(t, "reset token left behind", err)
	events, err := r.Outbox().ListAfter(ctx, "", 1000)
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	for _, e := range events {
		if e.ID == w.event.ID {
			t.Fatalf("event %s left behind in the outbox", e.ID)
		}
	}
}

// mutations changes rows that existed before the unit began, so that a
// rollback must restore old values, not only forget new rows.
type mutations struct {
	rows      unitRows
	otherFam  account.RefreshToken
	newHash   string
	changedAt time.Time
	// movedTo is the user id the membership is moved to.
	movedTo string
}

func (f storeFixture) committedRows() mutations {
	f.t.Helper()
	rows := f.unitRows()
	f.must("commit rows", rows.write(f.ctx, f.s))
	m := mutations{rows: rows, otherFam: f.refreshToken(storeID("fam"), rows.user.ID, rows.team.ID),
		newHash: "$argon2id$changed", changedAt: storeAt(time.Hour), movedTo: storeID("usr")}
	f.must("create token", f.s.RefreshTokens().Create(f.ctx, m.otherFam))
	return m
}

func (m mutations) apply(ctx context.Context, r storage.Store) error {
	rows := m.rows
	if err := r.Users().UpdatePassword(ctx, rows.user.ID, m.newHash, m.changedAt); err != nil {
		return fmt.Errorf("update password: %w", err)
	}
	if err := r.APIKeys().Delete(ctx, rows.team.ID, rows.key.ID); err != nil {
		return fmt.Errorf("delete api key: %w", err)
	}
	if ok, err := r.RefreshTokens().Consume(ctx, rows.refresh.ID, m.changedAt); err != nil || !ok {
		return fmt.Errorf("consume refresh token: %v, %w", ok, err)
	}
	if err := r.RefreshTokens().RevokeFamily(ctx, m.otherFam.FamilyID, m.changedAt); err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	if err := r.RefreshTokens().RevokeUser(ctx, rows.user.ID, m.changedAt); err != nil {
		return fmt.Errorf("revoke user: %w", err)
	}
	if ok, err := r.ResetTokens().Consume(ctx, rows.reset.ID, m.changedAt); err != nil || !ok {
		return fmt.Errorf("consume reset token: %v, %w", ok, err)
	}
	moved := rows.member
	moved.UserID, moved.Role = m.movedTo, team.RoleAdmin
	if err := r.Memberships().Update(ctx, moved); err != nil {
		return fmt.Errorf("update membership: %w", err)
	}
	if ok, err := r.Invitations().Consume(ctx, rows.invite.ID, m.changedAt); err != nil || !ok {
		return fmt.Errorf("consume invitation: %v, %w", ok, err)
	}
	return nil
}

func (m mutations) expectUnchanged(t *testing.T, ctx context.Context, r storage.Store) {
	t.Helper()
	m.rows.expectPresent(t, ctx, r)
	_, err := r.Memberships().ByUser(ctx, m.rows.team.ID, m.movedTo)
	expectNotFound(t, "membership under the user id it was moved to", err)
	got, err := r.RefreshTokens().ByID(ctx, m.otherFam.ID)
	if err != nil {
		t.Fatalf("refresh token %s: %v", m.otherFam.ID, err)
	}
	checkEqual(t, "refresh", got, m.otherFam)
	keys, err := r.APIKeys().ListByUser(ctx, m.rows.team.ID, m.rows.user.ID)
	if err != nil {
		t.Fatalf("list api keys: %v", err)
	}
	checkIDs(t, "api keys", keyIDs(keys), []string{m.rows.key.ID})
}

func keyIDs(keys []account.APIKey) []string {
	return ids(keys, func(k account.APIKey) string { return k.ID })
}

var errUnitFailed = errors.New("conformance: the unit of work fails on purpose")

// unitPanic is the value the panicking unit panics with; it must come out of
// Do unchanged.
type unitPanic struct{ reason string }

func runUnitOfWork(t *testing.T, newStore NewStore) {
	t.Run("commit makes every write visible", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		rows := f.unitRows()
		f.must("Do", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			return rows.write(ctx, tx)
		}))
		rows.expectPresent(t, f.ctx, f.s)
	})

	t.Run("reads inside the unit see its own writes", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		before := f.committedRows()
		rows := f.unitRows()
		f.must("Do", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			before.rows.expectPresent(t, ctx, tx)
			if err := rows.write(ctx, tx); err != nil {
				return err
			}
			rows.expectPresent(t, ctx, tx)
			if err := before.apply(ctx, tx); err != nil {
				return err
			}
			u, err := tx.Users().ByID(ctx, before.rows.user.ID)
			if err != nil {
				return err
			}
			checkEqual(t, "password hash inside the unit", u.PasswordHash, before.newHash)
			_, err = tx.APIKeys().ByID(ctx, before.rows.key.ID)
			expectNotFound(t, "deleted api key inside the unit", err)
			rt, err := tx.RefreshTokens().ByID(ctx, before.rows.refresh.ID)
			if err != nil {
				return err
			}
			checkEqual(t, "consumed refresh token UsedAt inside the unit", rt.UsedAt, &before.changedAt)
			moved, err := tx.Memberships().ByUser(ctx, before.rows.team.ID, before.movedTo)
			if err != nil {
				return fmt.Errorf("moved membership inside the unit: %w", err)
			}
			checkEqual(t, "moved membership inside the unit", moved.ID, before.rows.member.ID)
			checkEqual(t, "moved membership role inside the unit", moved.Role, team.RoleAdmin)
			_, err = tx.Memberships().ByUser(ctx, before.rows.team.ID, before.rows.user.ID)
			expectNotFound(t, "membership under the user id it was moved from, inside the unit", err)
			inv, err := tx.Invitations().ByID(ctx, before.rows.invite.ID)
			if err != nil {
				return err
			}
			checkEqual(t, "consumed invitation UsedAt inside the unit", inv.UsedAt, &before.changedAt)
			if ok, err := tx.RefreshTokens().Consume(ctx, rows.refresh.ID, storeAt(time.Minute)); err != nil || !ok {
				t.Errorf("Consume of a token created in the unit: %v, %v", ok, err)
			}
			return nil
		}))
		rows.refresh.UsedAt = storePtr(storeAt(time.Minute))
		rows.expectPresent(t, f.ctx, f.s)
	})

	t.Run("an error rolls back every write", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		before := f.committedRows()
		rows := f.unitRows()
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := rows.write(ctx, tx); err != nil {
				return err
			}
			if err := before.apply(ctx, tx); err != nil {
				return err
			}
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do returned %v, want the error fn returned", err)
		}
		rows.expectAbsent(t, f.ctx, f.s)
		before.expectUnchanged(t, f.ctx, f.s)

		// The store is still usable, and the same rows can now be written.
		f.must("Do after rollback", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			return rows.write(ctx, tx)
		}))
		rows.expectPresent(t, f.ctx, f.s)
	})

	t.Run("a panic rolls back every write and propagates", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		before := f.committedRows()
		rows := f.unitRows()
		want := &unitPanic{reason: "deliberate"}
		storeWithin(t, "Do with a panicking fn", func() {
			returned := false
			defer func() {
				r := recover()
				if returned {
					t.Errorf("Do returned instead of propagating the panic")
					return
				}
				if r != want {
					t.Errorf("recovered %v, want the value fn panicked with", r)
				}
			}()
			_ = inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				if err := rows.write(ctx, tx); err != nil {
					t.Errorf("write: %v", err)
				}
				if err := before.apply(ctx, tx); err != nil {
					t.Errorf("apply: %v", err)
				}
				panic(want)
			})
			returned = true
		})
		if t.Failed() {
			t.FailNow()
		}
		storeWithin(t, "reads after a panicking unit", func() {
			rows.expectAbsent(t, f.ctx, f.s)
			before.expectUnchanged(t, f.ctx, f.s)
			if err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				return rows.write(ctx, tx)
			}); err != nil {
				t.Errorf("Do after a panicking unit: %v", err)
			}
		})
	})

	t.Run("a conflict inside the unit rolls back its earlier writes", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		taken := f.user("")
		f.must("create user", f.s.Users().Create(f.ctx, taken))
		rows := f.unitRows()
		rows.user.Email = taken.Email
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.Teams().Create(ctx, rows.team); err != nil {
				return err
			}
			if err := tx.Outbox().Append(ctx, rows.event); err != nil {
				return err
			}
			return tx.Users().Create(ctx, rows.user)
		})
		expectConflict(t, "Do", err)
		_, err = f.s.Teams().ByID(f.ctx, rows.team.ID)
		expectNotFound(t, "team written before the conflict", err)
		events, err := f.s.Outbox().ListAfter(f.ctx, "", 1000)
		f.must("ListAfter", err)
		if len(events) != 0 {
			t.Fatalf("events written before the conflict stayed: %v", eventIDs(events))
		}
		_, err = f.s.Users().ByID(f.ctx, rows.user.ID)
		expectNotFound(t, "refused user", err)
		got, err := f.s.Users().ByEmail(f.ctx, taken.Email)
		f.must("ByEmail", err)
		checkEqual(t, "user", got, taken)
	})

	t.Run("concurrent units with distinct rows all commit", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		const n = 10
		all := make([]unitRows, n)
		for i := range all {
			all[i] = f.unitRows()
		}
		errs := runConcurrently(n, func(i int) error {
			return inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				return all[i].write(ctx, tx)
			})
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("unit %d: %v", i, err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		for _, rows := range all {
			rows.expectPresent(t, f.ctx, f.s)
		}
		events, err := f.s.Outbox().ListAfter(f.ctx, "", 1000)
		f.must("ListAfter", err)
		if len(events) != n {
			t.Fatalf("outbox holds %d events, want %d", len(events), n)
		}
	})

	t.Run("concurrent units taking one email: exactly one commits", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		const n = 10
		email := "race-" + storeID("n") + "@example.com"
		all := make([]unitRows, n)
		for i := range all {
			all[i] = f.unitRows()
			all[i].user.Email = email
		}
		errs := runConcurrently(n, func(i int) error {
			return inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				// The team first, so that a loser has something to roll back.
				if err := tx.Teams().Create(ctx, all[i].team); err != nil {
					return err
				}
				return tx.Users().Create(ctx, all[i].user)
			})
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("units %d and %d both committed one email", winner, i)
			case err == nil:
				winner = i
			case !domain.IsKind(err, domain.KindConflict):
				t.Errorf("unit %d: %v, want a conflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no unit committed")
		}
		got, err := f.s.Users().ByEmail(f.ctx, email)
		f.must("ByEmail", err)
		checkEqual(t, "user holding the email", got.ID, all[winner].user.ID)
		for i, rows := range all {
			_, err := f.s.Teams().ByID(f.ctx, rows.team.ID)
			if i == winner {
				f.must("winner's team", err)
			} else {
				expectNotFound(t, fmt.Sprintf("team of losing unit %d", i), err)
			}
		}
	})

	// Another goroutine's plain call must wait for or run beside the unit, not
	// hang it; what it sees depends on the store's isolation.
	t.Run("calls from another goroutine during a unit do not deadlock", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		rows := f.unitRows()
		outside := make(chan error, 1)
		storeWithin(t, "Do while another goroutine reads", func() {
			err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				if err := rows.write(ctx, tx); err != nil {
					return err
				}
				go func() {
					_, err := f.s.Users().ByID(f.ctx, rows.user.ID)
					outside <- err
				}()
				return nil
			})
			if err != nil {
				t.Errorf("Do: %v", err)
			}
		})
		storeWithin(t, "the outside read", func() {
			if err := <-outside; err != nil && !domain.IsKind(err, domain.KindNotFound) {
				t.Errorf("outside read: %v", err)
			}
		})
		rows.expectPresent(t, f.ctx, f.s)
	})

	t.Run("a unit started inside another is refused and the outer one goes on", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		rows := f.unitRows()
		var nested error
		storeWithin(t, "nested Do", func() {
			f.must("Do", f.s.Do(f.ctx, func(ctx context.Context) error {
				nested = f.s.Do(ctx, func(ctx context.Context) error { return rows.write(ctx, f.s) })
				return nil
			}))
		})
		if nested == nil {
			t.Fatal("a unit started with the context of a running unit was not refused")
		}
		rows.expectAbsent(t, f.ctx, f.s)
	})

	t.Run("a context that outlives its unit writes nothing", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		var leaked context.Context
		f.must("Do", f.s.Do(f.ctx, func(ctx context.Context) error {
			leaked = ctx
			return nil
		}))
		rows := f.unitRows()
		var err error
		storeWithin(t, "a write with a finished unit's context", func() {
			err = f.s.Users().Create(leaked, rows.user)
		})
		if err == nil {
			t.Fatal("a write with the context of a finished unit succeeded")
		}
		if _, err := f.s.Users().ByID(f.ctx, rows.user.ID); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("user written through a finished unit's context: %v, want not found", err)
		}
	})
}

// runConcurrently runs fn(0..n-1) in goroutines released together and returns
// their errors by index.
func runConcurrently(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}
