package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// The contract is checked by tests/conformance (nested units and contexts
// that outlive their unit are refused there, for every store); these tests
// cover what only this adapter promises.

var now = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

func newTeam(t *testing.T, id string) team.Team {
	t.Helper()
	tm, err := team.NewTeam(id, "Team "+id, now)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// fn may share its context with goroutines of its own; the race detector
// checks that the store serialises their calls.
func TestTxSharedByGoroutinesInsideTheUnit(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	const n = 16
	err := s.Do(ctx, func(ctx context.Context) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := "tm_" + string(rune('a'+i))
				if errs[i] = s.Teams().Create(ctx, newTeam(t, id)); errs[i] == nil {
					_, errs[i] = s.Teams().ByID(ctx, id)
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
	err := s.Do(ctx, func(ctx context.Context) error {
		if err := s.Teams().Create(ctx, newTeam(t, "tm_cancelled")); err != nil {
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

// Claims read only the deliveries still pending, kept apart from the rest;
// a unit that rolls back must put a delivery it finished or deleted back
// among them, or no dispatcher would ever attempt it again.
func TestRolledBackUnitLeavesDeliveriesPending(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	ep := webhook.Endpoint{ID: "whe_1", TeamID: "tm_1", URL: "https://hooks.example.com/in", Enabled: true, CreatedAt: now, UpdatedAt: now}
	d := webhook.Delivery{ID: "dlv_1", TeamID: "tm_1", EndpointID: ep.ID, EventID: "evt_1", EventType: event.TeamMemberAdded,
		Status: webhook.StatusPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	if err := s.WebhookEndpoints().Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliveries().Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	claim := webhookstore.DeliveryClaim{Owner: "a", Now: now, LeaseUntil: now, Limit: 10}
	for name, undone := range map[string]func(ctx context.Context) error{
		"completed": func(ctx context.Context) error {
			claimed, err := s.Deliveries().Claim(ctx, claim)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("Claim: %d deliveries, %v", len(claimed), err)
			}
			done := claimed[0]
			done.Status = webhook.StatusSucceeded
			_, err = s.Deliveries().Complete(ctx, claim.Owner, done)
			return err
		},
		"deleted with its endpoint": func(ctx context.Context) error {
			return s.WebhookEndpoints().Delete(ctx, ep.TeamID, ep.ID)
		},
	} {
		errUndo := errors.New("undo")
		err := s.Do(ctx, func(ctx context.Context) error {
			if err := undone(ctx); err != nil {
				return err
			}
			return errUndo
		})
		if err != errUndo {
			t.Fatalf("%s: Do: %v", name, err)
		}
		if _, _, ok, err := s.Deliveries().Pending(ctx); !ok || err != nil {
			t.Fatalf("%s, rolled back: Pending reports none (%v)", name, err)
		}
		claim.Owner, claim.Now = name, claim.Now.Add(time.Minute)
		if got, err := s.Deliveries().Claim(ctx, claim); err != nil || len(got) != 1 {
			t.Fatalf("%s, rolled back: Claim: %d deliveries, %v", name, len(got), err)
		}
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
