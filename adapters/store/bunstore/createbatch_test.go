package bunstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// batchCreate is one create of a held batch: its profile, bound and
// outcome.
type batchCreate struct {
	p   profile.Profile
	max int
	err error
}

// createHeld queues creates on a PostgreSQL store whose creates are held,
// waits until every one is queued, releases them and waits for all.
func createHeld(t *testing.T, s *bunstore.Store, creates []*batchCreate) {
	t.Helper()
	queued, release := bunstore.HoldCreates(s)
	var wg sync.WaitGroup
	for _, c := range creates {
		wg.Go(func() {
			ev, err := event.New("evt_"+c.p.ID, c.p.TeamID, event.ProfileCreated, at, map[string]any{"id": c.p.ID})
			if err != nil {
				c.err = err
				return
			}
			c.err = s.Profiles().CreateWithin(context.Background(), c.p, c.max, ev)
		})
	}
	poll.Check(t, poll.Timeout, "every create queued", func() error {
		if n := queued(); n < len(creates) {
			return fmt.Errorf("%d of %d queued", n, len(creates))
		}
		return nil
	})
	release()
	wg.Wait()
}

func batchProfile(teamID string, i int) profile.Profile {
	p := benchProfile(teamID, i)
	p.ID = fmt.Sprintf("prf_%s_%03d", teamID, i)
	return p
}

// transactions counts the transactions that inserted the team's profiles
// (their rows' xmin), and the team's events.
func transactions(t *testing.T, s *bunstore.Store, teamID string) (txs, events int) {
	t.Helper()
	ctx := context.Background()
	if err := bunstore.DB(s).NewRaw(`SELECT count(DISTINCT xmin::text) FROM profiles WHERE team_id = ?`, teamID).Scan(ctx, &txs); err != nil {
		t.Fatal(err)
	}
	if err := bunstore.DB(s).NewRaw(`SELECT count(*) FROM outbox_events WHERE team_id = ?`, teamID).Scan(ctx, &events); err != nil {
		t.Fatal(err)
	}
	return txs, events
}

// Creates that queue for a connection commit together, a team's in one
// transaction, each with its event; the teams' batches are apart.
func TestQueuedCreatesCommitTogether(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	var creates []*batchCreate
	for _, team := range []string{"tm_a", "tm_b"} {
		// The team's first create makes its shards, alone.
		if err := s.Profiles().Create(context.Background(), batchProfile(team, 99)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		creates = append(creates, &batchCreate{p: batchProfile("tm_a", i)}, &batchCreate{p: batchProfile("tm_b", i)})
	}
	createHeld(t, s, creates)
	for _, c := range creates {
		if c.err != nil {
			t.Fatalf("create %s: %v", c.p.ID, c.err)
		}
		if _, err := s.Profiles().ByID(context.Background(), c.p.TeamID, c.p.ID); err != nil {
			t.Fatalf("read %s: %v", c.p.ID, err)
		}
	}
	for _, team := range []string{"tm_a", "tm_b"} {
		if txs, events := transactions(t, s, team); txs != 2 || events != 10 {
			t.Errorf("team %s: 11 profiles in %d transactions with %d events, want 2 (the first alone) and 10", team, txs, events)
		}
	}
}

// A batch whose one create fails commits none of them; each then runs
// alone and meets its own outcome.
func TestBatchWithAFailingCreateRunsEachAlone(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	dup := batchProfile("tm_a", 3)
	if err := s.Profiles().Create(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	var creates []*batchCreate
	for i := range 6 {
		creates = append(creates, &batchCreate{p: batchProfile("tm_a", i)})
	}
	createHeld(t, s, creates)
	for i, c := range creates {
		if i == 3 {
			if !domain.IsKind(c.err, domain.KindConflict) {
				t.Errorf("create of an existing id: %v, want a conflict", c.err)
			}
		} else if c.err != nil {
			t.Errorf("create %s: %v", c.p.ID, c.err)
		}
	}
	// The five new ones each alone, and the one created before them.
	if txs, events := transactions(t, s, "tm_a"); txs != 6 || events != 5 {
		t.Errorf("6 profiles in %d transactions with %d events, want 6 and 5", txs, events)
	}
}

// Batched creates under a bound count exactly up to it: a batch's shard
// takes its share, and the creates beyond it count elsewhere, alone.
func TestBatchedCreatesKeepTheBound(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	const bound = 40
	if err := s.Profiles().CreateWithin(context.Background(), batchProfile("tm_a", 999), bound); err != nil {
		t.Fatal(err)
	}
	var creates []*batchCreate
	for i := range 60 {
		creates = append(creates, &batchCreate{p: batchProfile("tm_a", i), max: bound})
	}
	createHeld(t, s, creates)
	ok := 0
	for _, c := range creates {
		switch {
		case c.err == nil:
			ok++
		case !domain.IsKind(c.err, domain.KindValidation):
			t.Fatalf("create %s: %v, want success or quota reached", c.p.ID, c.err)
		}
	}
	n, err := s.Profiles().Count(context.Background(), "tm_a")
	if err != nil {
		t.Fatal(err)
	}
	if n != bound || ok != bound-1 {
		t.Fatalf("bound %d: %d profiles, %d of 60 creates succeeded, want %d", bound, n, ok, bound-1)
	}
	// Some were counted in batches: fewer transactions than profiles.
	if txs, _ := transactions(t, s, "tm_a"); txs >= bound {
		t.Fatalf("%d profiles in %d transactions: none was batched", n, txs)
	}
}
