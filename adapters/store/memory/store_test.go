package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// The contract is checked by tests/conformance; these tests cover what only
// this adapter promises: misuse is refused rather than deadlocking.

var now = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

func newTeam(t *testing.T, id string) team.Team {
	t.Helper()
	tm, err := team.NewTeam(id, "Team "+id, now)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestStoreCalledInsideItsOwnUnitIsRefused(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	var plainErr, nestedErr error
	err := s.Do(ctx, func(ctx context.Context, tx ports.Repositories) error {
		if err := tx.Teams().Create(ctx, newTeam(t, "tm_1")); err != nil {
			return err
		}
		_, plainErr = s.Teams().ByID(ctx, "tm_1")
		nestedErr = s.Do(ctx, func(context.Context, ports.Repositories) error { return nil })
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if plainErr == nil || domain.IsKind(plainErr, domain.KindNotFound) {
		t.Fatalf("plain call inside the unit: %v, want the misuse error", plainErr)
	}
	if nestedErr == nil {
		t.Fatal("nested Do inside the unit was not refused")
	}
	// Once the unit is over, the same context may be used again.
	if _, err := s.Teams().ByID(ctx, "tm_1"); err != nil {
		t.Fatalf("ByID after the unit: %v", err)
	}
}

func TestTxUsedAfterItsUnitIsRefused(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	var leaked ports.Repositories
	var leakedCtx context.Context
	if err := s.Do(ctx, func(ctx context.Context, tx ports.Repositories) error {
		leaked, leakedCtx = tx, ctx
		return nil
	}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if err := leaked.Teams().Create(leakedCtx, newTeam(t, "tm_late")); err == nil {
		t.Fatal("write through a finished unit's tx succeeded")
	}
	if _, err := s.Teams().ByID(ctx, "tm_late"); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("ByID of the refused team: %v, want not found", err)
	}
	// The finished unit's context no longer marks a unit in progress.
	if err := s.Teams().Create(leakedCtx, newTeam(t, "tm_after")); err != nil {
		t.Fatalf("plain call with a finished unit's context: %v", err)
	}
}

// fn may share tx with goroutines of its own; the race detector checks that
// the store serialises them.
func TestTxSharedByGoroutinesInsideTheUnit(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	const n = 16
	err := s.Do(ctx, func(ctx context.Context, tx ports.Repositories) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := "tm_" + string(rune('a'+i))
				if errs[i] = tx.Teams().Create(ctx, newTeam(t, id)); errs[i] == nil {
					_, errs[i] = tx.Teams().ByID(ctx, id)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	for i := range n {
		if _, err := s.Teams().ByID(ctx, "tm_"+string(rune('a'+i))); err != nil {
			t.Fatalf("team %d: %v", i, err)
		}
	}
}

func TestUnitWhoseContextEndsIsRolledBack(t *testing.T) {
	s := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Do(ctx, func(ctx context.Context, tx ports.Repositories) error {
		if err := tx.Teams().Create(ctx, newTeam(t, "tm_cancelled")); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("Do: %v, want context.Canceled", err)
	}
	if _, err := s.Teams().ByID(context.Background(), "tm_cancelled"); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("ByID: %v, want not found", err)
	}
}

func TestListAfterWithoutLimitListsNothing(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	if err := s.Outbox().Append(ctx, eventFor(t)); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, -1} {
		got, err := s.Outbox().ListAfter(ctx, "", limit)
		if err != nil || len(got) != 0 {
			t.Fatalf("ListAfter limit %d: %d events, %v", limit, len(got), err)
		}
	}
	got, err := s.Outbox().ListAfter(ctx, "", 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("ListAfter limit 1: %d events, %v", len(got), err)
	}
}
func eventFor(t *testing.T) event.Event {
	t.Helper()
	e, err := event.New("evt_1", "tm_1", event.TeamMemberAdded, now, map[string]string{"member": "mem_1"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
