package conformance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// runIdempotencyRecords checks ports.IdempotencyRecords: one live record per
// key, expired ones replaced and swept, claims that commit or roll back with
// their unit, one winner among concurrent claims, and responses kept byte for
// byte.
func runIdempotencyRecords(t *testing.T, newStore NewStore) {
	claim := func(k ports.IdempotencyKey, fp []byte, at time.Time) ports.IdempotencyRecord {
		return ports.IdempotencyRecord{IdempotencyKey: k, Fingerprint: fp, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	newKey := func() ports.IdempotencyKey {
		return ports.IdempotencyKey{TeamID: storeID("tm"), Scope: storeID("usr"), Key: "order-42 !~"}
	}
	claimInUnit := func(f storeFixture, rec ports.IdempotencyRecord, now time.Time) bool {
		f.t.Helper()
		var ok bool
		f.must("Do", f.s.Do(f.ctx, func(ctx context.Context) error {
			var err error
			ok, err = f.s.IdempotencyRecords().Claim(ctx, rec, now)
			return err
		}))
		return ok
	}
	find := func(f storeFixture, k ports.IdempotencyKey, now time.Time) (ports.IdempotencyRecord, bool) {
		f.t.Helper()
		rec, found, err := f.s.IdempotencyRecords().Find(f.ctx, k, now)
		f.must("Find", err)
		return rec, found
	}

	t.Run("claim, find and complete", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := newKey()
		want := claim(k, storeHash(1), storeAt(0).In(storeZone))
		if !claimInUnit(f, want, storeAt(0)) {
			t.Fatal("Claim of a free key reported false")
		}
		got, found := find(f, k, storeAt(time.Hour))
		if !found {
			t.Fatal("Find: the claim is not there")
		}
		checkEqual(t, "claimed record", got, want)

		done := want
		done.Done, done.Status = true, 201
		done.Headers = map[string]string{"Content-Type": "application/json", "ETag": `"1"`}
		done.Body = []byte("{\"id\":\"prf_1\",\"bytes\":\"\x00\xff\"}")
		f.must("Complete", f.s.IdempotencyRecords().Complete(f.ctx, done))
		got, _ = find(f, k, storeAt(time.Hour))
		checkEqual(t, "completed record", got, done)

		withheld := want
		withheld.Done, withheld.Status, withheld.Withheld = true, 201, ports.IdempotencyWithheldCredentials
		f.must("Complete", f.s.IdempotencyRecords().Complete(f.ctx, withheld))
		got, _ = find(f, k, storeAt(time.Hour))
		checkEqual(t, "withheld record", got, withheld)

		missing := claim(newKey(), storeHash(2), storeAt(0))
		expectNotFound(t, "Complete of a key never claimed", f.s.IdempotencyRecords().Complete(f.ctx, missing))
	})

	t.Run("one live record per key", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := newKey()
		first := claim(k, storeHash(1), storeAt(0))
		claimInUnit(f, first, storeAt(0))
		if claimInUnit(f, claim(k, storeHash(2), storeAt(time.Minute)), storeAt(time.Minute)) {
			t.Fatal("a second claim of a live key reported true")
		}
		got, _ := find(f, k, storeAt(time.Minute))
		checkEqual(t, "record after a second claim", got, first)
		// The same key in another scope or team is another record.
		for _, other := range []ports.IdempotencyKey{
			{TeamID: k.TeamID, Scope: storeID("usr"), Key: k.Key},
			{TeamID: storeID("tm"), Scope: k.Scope, Key: k.Key},
		} {
			if !claimInUnit(f, claim(other, storeHash(3), storeAt(0)), storeAt(0)) {
				t.Fatalf("claim of %+v reported false", other)
			}
		}
	})

	t.Run("expiry", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := newKey()
		claimInUnit(f, claim(k, storeHash(1), storeAt(0)), storeAt(0))
		if _, found := find(f, k, storeAt(24*time.Hour-time.Second)); !found {
			t.Fatal("Find: a live record is not found")
		}
		if _, found := find(f, k, storeAt(24*time.Hour)); found {
			t.Fatal("Find: an expired record is found")
		}
		next := claim(k, storeHash(2), storeAt(24*time.Hour))
		if !claimInUnit(f, next, storeAt(24*time.Hour)) {
			t.Fatal("Claim over an expired record reported false")
		}
		got, _ := find(f, k, storeAt(25*time.Hour))
		checkEqual(t, "record that replaced an expired one", got, next)
	})

	t.Run("a claim rolls back with its unit", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := newKey()
		refused := errors.New("the effect failed")
		err := f.s.Do(f.ctx, func(ctx context.Context) error {
			if _, err := f.s.IdempotencyRecords().Claim(ctx, claim(k, storeHash(1), storeAt(0)), storeAt(0)); err != nil {
				return err
			}
			return refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("Do: %v", err)
		}
		if _, found := find(f, k, storeAt(0)); found {
			t.Fatal("a rolled-back claim is there")
		}
	})

	t.Run("concurrent claims of one key: one wins", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		k := newKey()
		const n = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  int
			errs []error
		)
		for i := range n {
			wg.Go(func() {
				err := f.s.Do(f.ctx, func(ctx context.Context) error {
					ok, err := f.s.IdempotencyRecords().Claim(ctx, claim(k, storeHash(byte(i)), storeAt(0)), storeAt(0))
					if err == nil && ok {
						mu.Lock()
						won++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 1 || len(errs) != 0 {
			t.Fatalf("%d of %d claims won (errors %v), want exactly 1", won, n, errs)
		}
	})

	t.Run("count live records of a team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, other := storeID("tm"), storeID("tm")
		for i, at := range []time.Duration{0, time.Hour, 2 * time.Hour} {
			k := ports.IdempotencyKey{TeamID: teamID, Scope: storeID("usr"), Key: "k"}
			claimInUnit(f, claim(k, storeHash(byte(i)), storeAt(at)), storeAt(at))
		}
		claimInUnit(f, claim(ports.IdempotencyKey{TeamID: other, Scope: "usr", Key: "k"}, storeHash(9), storeAt(0)), storeAt(0))
		for _, c := range []struct {
			at   time.Duration
			want int
		}{{0, 3}, {24*time.Hour - time.Second, 3}, {24 * time.Hour, 2}, {26 * time.Hour, 0}} {
			n, err := f.s.IdempotencyRecords().CountLive(f.ctx, teamID, storeAt(c.at))
			f.must("CountLive", err)
			if n != c.want {
				t.Fatalf("CountLive at +%s = %d, want %d", c.at, n, c.want)
			}
		}
	})

	t.Run("delete expired, bounded", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		var keys []ports.IdempotencyKey
		for i := range 5 {
			k := newKey()
			keys = append(keys, k)
			at := storeAt(time.Duration(i) * time.Hour)
			claimInUnit(f, claim(k, storeHash(byte(i)), at), at)
		}
		// At +27h the first four have expired (created at 0h to 3h).
		now := storeAt(27*time.Hour + time.Minute)
		n, err := f.s.IdempotencyRecords().DeleteExpired(f.ctx, now, 3)
		f.must("DeleteExpired", err)
		if n != 3 {
			t.Fatalf("DeleteExpired(limit 3) = %d, want 3", n)
		}
		n, err = f.s.IdempotencyRecords().DeleteExpired(f.ctx, now, 3)
		f.must("DeleteExpired", err)
		if n != 1 {
			t.Fatalf("second DeleteExpired = %d, want 1", n)
		}
		if _, found := find(f, keys[4], now); !found {
			t.Fatal("DeleteExpired removed a live record")
		}
		// An expired record's key is free: a claim at an earlier time would
		// find the deleted rows live, so they are really gone.
		for _, k := range keys[:4] {
			if _, found := find(f, k, storeAt(0)); found {
				t.Fatalf("%+v is still there", k)
			}
		}
	})
}
