package unit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/application/unit"
)

// store is a unit of work that records what happened, in order.
type store struct {
	mu  sync.Mutex
	log []string
	// commitErr fails the commit after fn succeeded.
	commitErr error
}

func (s *store) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, what)
}

func (s *store) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	s.note("begin")
	if err := fn(ctx); err != nil {
		s.note("rollback")
		return err
	}
	if s.commitErr != nil {
		s.note("commit lost")
		return s.commitErr
	}
	s.note("commit")
	return nil
}

func (s *store) want(t *testing.T, want ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.log, want) {
		t.Fatalf("got  %q\nwant %q", s.log, want)
	}
}

// claims claims in the unit, failing with err.
type claims struct {
	s   *store
	err error
}

func (c claims) Claim(context.Context) error {
	c.s.note("claim")
	return c.err
}

func hooked(s *store) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		s.note("write")
		unit.OnCommit(ctx, func(context.Context) { s.note("on commit") })
		unit.OnEnd(ctx, func(context.Context) { s.note("on end") })
		return nil
	}
}

func TestACommittedUnitRunsEveryHookAfterItsClaim(t *testing.T) {
	t.Parallel()
	s := &store{}
	if err := unit.New(s, claims{s: s}).Do(context.Background(), hooked(s)); err != nil {
		t.Fatal(err)
	}
	s.want(t, "begin", "write", "claim", "commit", "on commit", "on end")
}

func TestAFailedUnitRunsOnlyTheHooksOfItsEnd(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, c := range map[string]struct {
		s     *store
		claim error
		want  []string
	}{
		"the use case fails":   {s: &store{}, want: []string{"begin", "write", "rollback", "on end"}},
		"the claim is refused": {s: &store{}, claim: boom, want: []string{"begin", "write", "claim", "rollback", "on end"}},
		"the commit is lost":   {s: &store{commitErr: boom}, want: []string{"begin", "write", "claim", "commit lost", "on end"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn := hooked(c.s)
			if name == "the use case fails" {
				fn = func(ctx context.Context) error {
					_ = hooked(c.s)(ctx)
					return boom
				}
			}
			if err := unit.New(c.s, claims{s: c.s, err: c.claim}).Do(context.Background(), fn); !errors.Is(err, boom) {
				t.Fatalf("error %v, want %v", err, boom)
			}
			c.s.want(t, c.want...)
		})
	}
}

func TestHooksOutsideAUnitRunAtOnce(t *testing.T) {
	t.Parallel()
	s := &store{}
	ctx := context.Background()
	unit.OnEnd(ctx, func(context.Context) { s.note("on end") })
	unit.OnCommit(ctx, func(context.Context) { s.note("on commit") })
	s.want(t, "on end", "on commit")
}

func TestHooksGetTheContextOfDo(t *testing.T) {
	t.Parallel()
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "request-1")
	var got any
	err := unit.New(&store{}, nil).Do(ctx, func(ctx context.Context) error {
		unit.OnCommit(ctx, func(ctx context.Context) { got = ctx.Value(key{}) })
		return nil
	})
	if err != nil || got != "request-1" {
		t.Fatalf("hook saw %v (%v), want request-1", got, err)
	}
}
