package conformance

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/storage"
)

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

	runConsume(t, newStore, singleUseRecords[account.RefreshToken]{
		what: "refresh token",
		repo: func(s storage.Store) singleUse[account.RefreshToken] { return s.RefreshTokens() },
		pair: func(f storeFixture) (account.RefreshToken, account.RefreshToken) {
			tok := f.refreshToken(storeID("fam"), storeID("usr"), storeID("tm"))
			return tok, f.refreshToken(tok.FamilyID, tok.UserID, tok.TeamID)
		},
		id: func(tok account.RefreshToken) string { return tok.ID },
		used: func(tok account.RefreshToken, at time.Time) account.RefreshToken {
			tok.UsedAt = &at
			return tok
		},
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

	t.Run("ConsumeUser spends every unused token of the user only", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		userID := storeID("usr")
		a, b, other := f.resetToken(userID), f.resetToken(userID), f.resetToken(storeID("usr"))
		spent := f.resetToken(userID)
		earlier := storeAt(time.Minute)
		spent.UsedAt = &earlier
		for _, tok := range []account.ResetToken{a, b, other, spent} {
			f.must("Create", f.s.ResetTokens().Create(f.ctx, tok))
		}
		at := storeAt(time.Hour).In(storeZone)
		f.must("ConsumeUser", f.s.ResetTokens().ConsumeUser(f.ctx, userID, at))
		for _, tok := range []account.ResetToken{a, b} {
			got, err := f.s.ResetTokens().ByID(f.ctx, tok.ID)
			f.must("ByID", err)
			want := tok
			want.UsedAt = storePtr(at.UTC())
			checkEqual(t, "consumed reset", got, want)
			won, err := f.s.ResetTokens().Consume(f.ctx, tok.ID, at)
			f.must("Consume after ConsumeUser", err)
			if won {
				t.Fatal("a token spent by ConsumeUser was consumed again")
			}
		}
		got, err := f.s.ResetTokens().ByID(f.ctx, spent.ID)
		f.must("ByID spent", err)
		checkEqual(t, "already spent reset keeps its time", got, spent)
		got, err = f.s.ResetTokens().ByID(f.ctx, other.ID)
		f.must("ByID other", err)
		checkEqual(t, "another user's reset", got, other)
	})

	runConsume(t, newStore, singleUseRecords[account.ResetToken]{
		what: "reset token",
		repo: func(s storage.Store) singleUse[account.ResetToken] { return s.ResetTokens() },
		pair: func(f storeFixture) (account.ResetToken, account.ResetToken) {
			tok := f.resetToken(storeID("usr"))
			return tok, f.resetToken(tok.UserID)
		},
		id: func(tok account.ResetToken) string { return tok.ID },
		used: func(tok account.ResetToken, at time.Time) account.ResetToken {
			tok.UsedAt = &at
			return tok
		},
	})
}
