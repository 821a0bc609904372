package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports/storage"
)

// consumeRaces is how many goroutines race for one record.
const consumeRaces = 20

// singleUse is a repository of records that may be used once: invitations,
// refresh tokens and reset tokens.
type singleUse[T any] interface {
	Create(ctx context.Context, record T) error
	ByID(ctx context.Context, id string) (T, error)
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
}

// singleUseRecords tells runConsume how to reach one repository of
// single-use records and what Consume must make of a record.
type singleUseRecords[T any] struct {
	// what names a record in subtests and reports: "refresh token".
	what string
	repo func(s storage.Store) singleUse[T]
	// pair returns two unused records with distinct ids that share what
	// else they may (family, user, team), so that a Consume which marks more
	// than the record it is given is caught.
	pair func(f storeFixture) (T, T)
	id   func(record T) string
	// used returns record as Consume at at must leave it.
	used func(record T, at time.Time) T
}

// expect reads the record back and compares it with want.
func (c singleUseRecords[T]) expect(f storeFixture, want T) {
	f.t.Helper()
	got, err := c.repo(f.s).ByID(f.ctx, c.id(want))
	f.must("ByID "+c.id(want), err)
	checkEqual(f.t, c.what, got, want)
}

// runConsume checks the single-use contract every Consume of the storage
// ports shares: the first Consume of a stored record returns true and marks
// it used at the time given, a later one returns false, of concurrent
// callers exactly one gets true (whether each calls on its own or in a unit
// of work of its own), and Consume of an id never stored is a not-found
// error.
func runConsume[T any](t *testing.T, newStore NewStore, c singleUseRecords[T]) {
	t.Run("Consume succeeds once", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		record, sibling := c.pair(f)
		repo := c.repo(f.s)
		f.must("Create", repo.Create(f.ctx, record))
		f.must("Create sibling", repo.Create(f.ctx, sibling))

		at := storeAt(time.Minute).In(storeZone)
		ok, err := repo.Consume(f.ctx, c.id(record), at)
		f.must("first Consume", err)
		if !ok {
			t.Fatalf("first Consume of a fresh %s returned false", c.what)
		}
		ok, err = repo.Consume(f.ctx, c.id(record), storeAt(2*time.Minute))
		f.must("second Consume", err)
		if ok {
			t.Fatalf("second Consume of one %s returned true", c.what)
		}
		c.expect(f, c.used(record, at))
		c.expect(f, sibling)
	})

	t.Run("Consume of a missing "+c.what+" is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		record, _ := c.pair(f)
		ok, err := c.repo(f.s).Consume(f.ctx, c.id(record), storeAt(0))
		if ok {
			t.Error("Consume of an unknown id returned true")
		}
		expectNotFound(t, "Consume of an unknown id", err)
	})

	for _, race := range []struct {
		name, calls string
		inUnit      bool
	}{
		{"concurrent Consume: exactly one wins", "calls", false},
		{"concurrent Consume in units of work: exactly one wins", "units", true},
	} {
		t.Run(race.name, func(t *testing.T) {
			f := newStoreFixture(t, newStore)
			record, _ := c.pair(f)
			f.must("Create", c.repo(f.s).Create(f.ctx, record))
			at := storeAt(time.Minute)
			consume := func(ctx context.Context, s storage.Store) (bool, error) {
				return c.repo(s).Consume(ctx, c.id(record), at)
			}

			won := make([]bool, consumeRaces)
			var errs []error
			storeWithin(t, "concurrent Consume "+race.calls, func() {
				errs = runConcurrently(consumeRaces, func(i int) error {
					var ok bool
					var err error
					if race.inUnit {
						ok, err = consumeInUnit(f.ctx, f.s, consume)
					} else {
						ok, err = consume(f.ctx, f.s)
					}
					won[i] = ok && err == nil // each goroutine writes its own element
					return err
				})
			})
			// The contract gives losers false, not an error.
			for i, err := range errs {
				if err != nil {
					t.Errorf("concurrent Consume %d: %v", i, err)
				}
			}
			wins := 0
			for _, ok := range won {
				if ok {
					wins++
				}
			}
			if wins != 1 {
				t.Fatalf("%d of %d concurrent Consume %s returned true, want exactly 1", wins, consumeRaces, race.calls)
			}
			c.expect(f, c.used(record, at))
		})
	}
}

// consumeInUnit consumes through a unit of work of its own, as the use cases
// do.
func consumeInUnit(ctx context.Context, s storage.Store, consume func(ctx context.Context, tx storage.Store) (bool, error)) (bool, error) {
	var ok bool
	err := inUnit(ctx, s, func(ctx context.Context, tx storage.Store) error {
		var err error
		ok, err = consume(ctx, tx)
		return err
	})
	return ok, err
}
