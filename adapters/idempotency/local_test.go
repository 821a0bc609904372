package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/idempotency"
	"github.com/profilesvc/profilesvc/ports"
)

// The port's behaviour is checked by tests/conformance; these tests cover
// what only Local has: its bound and its sweep.

func TestLocalFullRefusesNewKeysAndKeepsLiveOnes(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := idempotency.NewLocalWithCapacity(c, 2)
	reserve := func(key string, ttl time.Duration) error {
		_, _, err := s.Reserve(ctx, key, []byte(key), ttl)
		return err
	}
	if err := reserve("a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := reserve("b", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := reserve("c", time.Minute); !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("Reserve when full: %v, want ErrFull", err)
	}
	done := ports.IdempotencyRecord{Fingerprint: []byte("a"), Status: 200}
	if err := s.Complete(ctx, "a", done, time.Minute); err != nil {
		t.Fatalf("Complete of a held key when full: %v", err)
	}
	if err := s.Complete(ctx, "c", done, time.Minute); !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("Complete of a new key when full: %v, want ErrFull", err)
	}
	// Both live records survived the refusals.
	for _, key := range []string{"a", "b"} {
		if _, ok, err := s.Reserve(ctx, key, nil, time.Minute); err != nil || ok {
			t.Fatalf("Reserve(%s) = (%v, %v), want the key still taken", key, ok, err)
		}
	}
	c.Advance(time.Minute) // a expires, b lives on: room for one
	if err := reserve("c", time.Minute); err != nil {
		t.Fatalf("Reserve once a record expired: %v", err)
	}
	if err := reserve("d", time.Minute); !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("Reserve when full again: %v, want ErrFull", err)
	}
	if err := s.Release(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := reserve("d", time.Minute); err != nil {
		t.Fatalf("Reserve after a release: %v", err)
	}
}

func TestLocalSweepsExpiredRecords(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := idempotency.NewLocal(c)
	for _, key := range []string{"a", "b", "c"} {
		if _, _, err := s.Reserve(ctx, key, nil, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(2 * time.Minute)
	if _, _, err := s.Reserve(ctx, "d", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 1 {
		t.Fatalf("Len = %d after the sweep, want 1", n)
	}
}
