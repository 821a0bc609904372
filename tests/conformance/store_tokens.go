package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// consumeRaces is how many goroutines race for one token.
const consumeRaces = 20

// raceConsume runs consume in consumeRaces goroutines released together and
// returns how many got true. Errors are reported: the contract gives losers
// false, not an error.
func raceConsume(t *testing.T, consume func() (bool, error)) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		wins  int
		start = make(chan struct{})
	)
	for range consumeRaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := consume()
			if err != nil {
				t.Errorf("concurrent Consume: %v", err)
				return
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return wins
}

// consumeInUnit consumes through a unit of work of its own, as the refresh
// use case does.
func consumeInUnit(ctx context.Context, s storage.Store, consume func(ctx context.Context, tx storage.Store) (bool, error)) (bool, error) {
	var ok bool
	err := inUnit(ctx, s, func(ctx context.Context, tx storage.Store) error {
		var err error
		ok, err = consume(ctx, tx)
		return err
	})
	return ok, err
}

func runRefreshTokenRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		tok.IssuedAt = tok.IssuedAt.In(storeZone)
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		got, err := f.s.RefreshTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		checkEqual(t, "refresh", got, tok)
	})

	t.Run("missing token is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, err := f.s.RefreshTokens().ByID(f.ctx, storeID("rtk"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		again := f.refreshToken(storeID("fam"), tok.UserID, tok.TeamID)
		again.ID = tok.ID
		expectConflict(t, "Create with the same id", f.s.RefreshTokens().Create(f.ctx, again))
	})

	t.Run("Consume succeeds once", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		sibling := f.refreshToken(tok.FamilyID, tok.UserID, tok.TeamID)
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		f.must("Create sibling", f.s.RefreshTokens().Create(f.ctx, sibling))

		at := storeAt(time.Minute).In(storeZone)
		ok, err := f.s.RefreshTokens().Consume(f.ctx, tok.ID, at)
		f.must("first Consume", err)
		if !ok {
			t.Fatal("first Consume of a fresh token returned false")
		}
		ok, err = f.s.RefreshTokens().Consume(f.ctx, tok.ID, storeAt(2*time.Minute))
		f.must("second Consume", err)
		if ok {
			t.Fatal("second Consume of one token returned true")
		}

		want := tok
		want.UsedAt = &at
		got, err := f.s.RefreshTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		checkEqual(t, "refresh", got, want)
		got, err = f.s.RefreshTokens().ByID(f.ctx, sibling.ID)
		f.must("ByID sibling", err)
		checkEqual(t, "refresh", got, sibling)
	})

	t.Run("Consume of a revoked token is refused", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		tok.RevokedAt = storePtr(storeAt(time.Second))
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		ok, err := f.s.RefreshTokens().Consume(f.ctx, tok.ID, storeAt(time.Minute))
		f.must("Consume", err)
		if ok {
			t.Fatal("Consume of a revoked token returned true")
		}
		got, err := f.s.RefreshTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		checkEqual(t, "refresh", got, tok)
	})

	// The contract does not say whether an unknown id is an error; it only
	// must never be reported as consumed.
	t.Run("Consume of a missing token is refused", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ok, err := f.s.RefreshTokens().Consume(f.ctx, storeID("rtk"), storeAt(0))
		if ok {
			t.Fatal("Consume of an unknown id returned true")
		}
		if err != nil && !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Consume of an unknown id: %v, want nil or not found", err)
		}
	})

	t.Run("RevokeFamily revokes only that family's live tokens", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		userID, teamID := storeID("usr"), storeID("tm")
		fam, otherFam := storeID("fam"), storeID("fam")
		live := f.refreshToken(fam, userID, teamID)
		used := f.refreshToken(fam, userID, teamID)
		used.UsedAt = storePtr(storeAt(time.Second))
		revoked := f.refreshToken(fam, userID, teamID)
		revoked.RevokedAt = storePtr(storeAt(2 * time.Second))
		other := f.refreshToken(otherFam, userID, teamID)
		for _, tok := range []account.RefreshToken{live, used, revoked, other} {
			f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		}

		at := storeAt(time.Hour).In(storeZone)
		f.must("RevokeFamily", f.s.RefreshTokens().RevokeFamily(f.ctx, fam, at))

		wantLive, wantUsed := live, used
		wantLive.RevokedAt, wantUsed.RevokedAt = &at, &at
		for _, want := range []account.RefreshToken{wantLive, wantUsed, revoked, other} {
			got, err := f.s.RefreshTokens().ByID(f.ctx, want.ID)
			f.must("ByID", err)
			checkEqual(t, "refresh", got, want)
		}
		ok, err := f.s.RefreshTokens().Consume(f.ctx, live.ID, storeAt(2*time.Hour))
		f.must("Consume", err)
		if ok {
			t.Fatal("Consume of a token of a revoked family returned true")
		}
		f.must("RevokeFamily of an unknown family", f.s.RefreshTokens().RevokeFamily(f.ctx, storeID("fam"), at))
	})

	t.Run("RevokeUser revokes only that user's live tokens", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		userID, otherUser, teamID := storeID("usr"), storeID("usr"), storeID("tm")
		a := f.refreshToken(storeID("fam"), userID, teamID)
		b := f.refreshToken(storeID("fam"), userID, storeID("tm"))
		revoked := f.refreshToken(storeID("fam"), userID, teamID)
		revoked.RevokedAt = storePtr(storeAt(time.Second))
		other := f.refreshToken(storeID("fam"), otherUser, teamID)
		for _, tok := range []account.RefreshToken{a, b, revoked, other} {
			f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		}

		at := storeAt(time.Hour)
		f.must("RevokeUser", f.s.RefreshTokens().RevokeUser(f.ctx, userID, at))

		wantA, wantB := a, b
		wantA.RevokedAt, wantB.RevokedAt = &at, &at
		for _, want := range []account.RefreshToken{wantA, wantB, revoked, other} {
			got, err := f.s.RefreshTokens().ByID(f.ctx, want.ID)
			f.must("ByID", err)
			checkEqual(t, "refresh", got, want)
		}
		f.must("RevokeUser of an unknown user", f.s.RefreshTokens().RevokeUser(f.ctx, storeID("usr"), at))
	})

	t.Run("concurrent Consume: exactly one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		wins := raceConsume(t, func() (bool, error) {
			return f.s.RefreshTokens().Consume(f.ctx, tok.ID, storeAt(time.Minute))
		})
		if wins != 1 {
			t.Fatalf("%d of %d concurrent Consume calls returned true, want exactly 1", wins, consumeRaces)
		}
	})

	t.Run("concurrent Consume in units of work: exactly one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		wins := raceConsume(t, func() (bool, error) {
			return consumeInUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) (bool, error) {
				return tx.RefreshTokens().Consume(ctx, tok.ID, storeAt(time.Minute))
			})
		})
		if wins != 1 {
			t.Fatalf("%d of %d concurrent Consume units returned true, want exactly 1", wins, consumeRaces)
		}
		got, err := f.s.RefreshTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		if got.UsedAt == nil {
			t.Fatal("token not marked used after a winning Consume committed")
		}
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
		tok.RevokedAt = storePtr(storeAt(time.Second))
		want := tok
		want.Hash = append([]byte(nil), tok.Hash...)
		want.RevokedAt = storePtr(*tok.RevokedAt)
		f.must("Create", f.s.RefreshTokens().Create(f.ctx, tok))
		tok.Hash[0] ^= 0xff
		*tok.RevokedAt = storeAt(99 * time.Hour)

		got, err := f.s.RefreshTokens().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		got.Hash[0] ^= 0xff
		*got.RevokedAt = storeAt(98 * time.Hour)

		got, err = f.s.RefreshTokens().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		checkEqual(t, "refresh", got, want)
	})
}

func runResetTokenRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.resetToken(storeID("usr"))
		tok.ExpiresAt = tok.ExpiresAt.In(storeZone)
		f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		got, err := f.s.ResetTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		checkEqual(t, "reset", got, tok)
	})

	t.Run("missing token is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, err := f.s.ResetTokens().ByID(f.ctx, storeID("rst"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.resetToken(storeID("usr"))
		f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		again := f.resetToken(storeID("usr"))
		again.ID = tok.ID
		expectConflict(t, "Create with the same id", f.s.ResetTokens().Create(f.ctx, again))
	})

	t.Run("Consume succeeds once", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.resetToken(storeID("usr"))
		other := f.resetToken(tok.UserID)
		f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		f.must("Create other", f.s.ResetTokens().Create(f.ctx, other))

		at := storeAt(time.Minute).In(storeZone)
		ok, err := f.s.ResetTokens().Consume(f.ctx, tok.ID, at)
		f.must("first Consume", err)
		if !ok {
			t.Fatal("first Consume of a fresh token returned false")
		}
		ok, err = f.s.ResetTokens().Consume(f.ctx, tok.ID, storeAt(2*time.Minute))
		f.must("second Consume", err)
		if ok {
			t.Fatal("second Consume of one token returned true")
		}

		want := tok
		want.UsedAt = &at
		got, err := f.s.ResetTokens().ByID(f.ctx, tok.ID)
		f.must("ByID", err)
		checkEqual(t, "reset", got, want)
		got, err = f.s.ResetTokens().ByID(f.ctx, other.ID)
		f.must("ByID other", err)
		checkEqual(t, "reset", got, other)
	})

	t.Run("Consume of a missing token is refused", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ok, err := f.s.ResetTokens().Consume(f.ctx, storeID("rst"), storeAt(0))
		if ok {
			t.Fatal("Consume of an unknown id returned true")
		}
		if err != nil && !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Consume of an unknown id: %v, want nil or not found", err)
		}
	})

	t.Run("concurrent Consume: exactly one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.resetToken(storeID("usr"))
		f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		wins := raceConsume(t, func() (bool, error) {
			return f.s.ResetTokens().Consume(f.ctx, tok.ID, storeAt(time.Minute))
		})
		if wins != 1 {
			t.Fatalf("%d of %d concurrent Consume calls returned true, want exactly 1", wins, consumeRaces)
		}
	})

	t.Run("concurrent Consume in units of work: exactly one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tok := f.resetToken(storeID("usr"))
		f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		wins := raceConsume(t, func() (bool, error) {
			return consumeInUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) (bool, error) {
				return tx.ResetTokens().Consume(ctx, tok.ID, storeAt(time.Minute))
			})
		})
		if wins != 1 {
			t.Fatalf("%d of %d concurrent Consume units returned true, want exactly 1", wins, consumeRaces)
		}
	})
}
