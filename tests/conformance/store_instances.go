package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// instanceRaces is how many goroutines race on the registry: as many as a
// PostgreSQL store's pool has connections, so that they all run at once.
const instanceRaces = 8

// runInstances checks profilestore.Instances, the fleet's registry: beats
// that replace a node's row whole and return the row they replaced, one
// finder among instances that find a node gone, removal only of a row that
// is gone and has not beaten since, rows listed by node, and calls that
// join the unit of work of their context.
//
// A time that must fall on the wrong side of seenBy differs from it by far
// more than storeTimePrecision, since a store may keep no finer time.
func runInstances(t *testing.T, newStore NewStore) {
	// list reads the registry, failing the test on an error.
	list := func(f storeFixture, ctx context.Context) []profilestore.Instance {
		f.t.Helper()
		got, err := f.s.Instances().List(ctx)
		f.must("List", err)
		return got
	}
	beat := func(f storeFixture, inst profilestore.Instance) *profilestore.Instance {
		f.t.Helper()
		replaced, err := f.s.Instances().Beat(f.ctx, inst)
		f.must("Beat "+inst.Node, err)
		return replaced
	}
	markGone := func(f storeFixture, node string, seenBy, at time.Time, want bool) {
		f.t.Helper()
		ok, err := f.s.Instances().MarkGone(f.ctx, node, seenBy, at)
		f.must("MarkGone "+node, err)
		if ok != want {
			f.t.Fatalf("MarkGone(%s, seen by %v) = %v, want %v", node, seenBy, ok, want)
		}
	}
	remove := func(f storeFixture, node string, seenBy time.Time, want bool) {
		f.t.Helper()
		ok, err := f.s.Instances().Remove(f.ctx, node, seenBy)
		f.must("Remove "+node, err)
		if ok != want {
			f.t.Fatalf("Remove(%s, seen by %v) = %v, want %v", node, seenBy, ok, want)
		}
	}

	t.Run("Beat records a new node as written", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		if got := list(f, f.ctx); len(got) != 0 {
			t.Fatalf("List of an empty registry = %+v, want none", got)
		}
		a := f.instance("http://node-a:8080", storeAt(time.Minute).In(storeZone))
		// No capacity, nothing running and no engine: a draining instance
		// of a runtime that runs no browser, whose zeros must round-trip.
		b := profilestore.Instance{
			Node: "http://node-b:8080", ID: storeID("ins"), Draining: true,
			Version: "dev", StartedAt: storeAt(0), SeenAt: storeAt(0),
		}
		for _, inst := range []profilestore.Instance{a, b} {
			if replaced := beat(f, inst); replaced != nil {
				t.Fatalf("Beat of a new node %s returned %+v, want nil", inst.Node, *replaced)
			}
		}
		checkEqual(t, "instances", list(f, f.ctx), []profilestore.Instance{a, b})
	})

	t.Run("Beat replaces every field and returns the row it replaced", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		node := "http://node-a:8080"
		first := f.instance(node, storeAt(time.Minute))
		beat(f, first)
		// A new process of the node: every field changes.
		second := profilestore.Instance{
			Node: node, ID: storeID("ins"), Capacity: first.Capacity + 4, Running: first.Running + 1,
			Draining: !first.Draining, Version: "v1.5.0", Engine: "Chromium 132.0.6834.83",
			StartedAt: storeAt(2 * time.Minute).In(storeZone), SeenAt: storeAt(3 * time.Minute).In(storeZone),
		}
		replaced := beat(f, second)
		if replaced == nil {
			t.Fatal("a second Beat returned nil, want the first row")
		}
		checkEqual(t, "row replaced by the second beat", *replaced, first)
		checkEqual(t, "instances after the second beat", list(f, f.ctx), []profilestore.Instance{second})

		// A node found gone beats again: the row it replaces says it was
		// gone, and it is live again whatever GoneAt the beat carries.
		goneAt := storeAt(10 * time.Minute)
		markGone(f, node, second.SeenAt, goneAt, true)
		third := f.instance(node, storeAt(11*time.Minute))
		third.GoneAt = storePtr(storeAt(12 * time.Minute))
		replaced = beat(f, third)
		if replaced == nil {
			t.Fatal("a Beat after MarkGone returned nil, want the gone row")
		}
		wantReplaced := second
		wantReplaced.GoneAt = &goneAt
		checkEqual(t, "row replaced by a beat after MarkGone", *replaced, wantReplaced)
		live := third
		live.GoneAt = nil
		checkEqual(t, "instances after a beat of a gone node", list(f, f.ctx), []profilestore.Instance{live})
	})

	t.Run("MarkGone marks a live row seen at or before seenBy", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a := f.instance("http://node-a:8080", storeAt(time.Minute))
		beat(f, a)
		at := storeAt(time.Hour).In(storeZone)

		markGone(f, a.Node, a.SeenAt.Add(-time.Second), at, false)
		markGone(f, "http://node-z:8080", storeAt(time.Hour), at, false)
		checkEqual(t, "instances after refused MarkGone", list(f, f.ctx), []profilestore.Instance{a})

		// seenBy is inclusive: the instant of the last beat, in another zone.
		markGone(f, a.Node, a.SeenAt.In(storeZone), at, true)
		gone := a
		gone.GoneAt = &at
		checkEqual(t, "instances after MarkGone", list(f, f.ctx), []profilestore.Instance{gone})

		markGone(f, a.Node, storeAt(2*time.Hour), storeAt(2*time.Hour), false)
		checkEqual(t, "instances after MarkGone of a gone row", list(f, f.ctx), []profilestore.Instance{gone})
	})

	t.Run("concurrent MarkGone: exactly one marks", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a := f.instance("http://node-a:8080", storeAt(time.Minute))
		beat(f, a)
		marked := make([]bool, instanceRaces)
		storeWithin(t, "concurrent MarkGone", func() {
			errs := runConcurrently(instanceRaces, func(i int) error {
				ok, err := f.s.Instances().MarkGone(f.ctx, a.Node, storeAt(time.Hour), storeAt(time.Hour+time.Duration(i)*time.Second))
				marked[i] = ok // each goroutine writes its own element
				return err
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("MarkGone %d: %v", i, err)
				}
			}
		})
		var winners []int
		for i, ok := range marked {
			if ok {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("MarkGone calls %v of %d reported true, want exactly one", winners, instanceRaces)
		}
		gone := a
		gone.GoneAt = storePtr(storeAt(time.Hour + time.Duration(winners[0])*time.Second))
		checkEqual(t, "instances after concurrent MarkGone", list(f, f.ctx), []profilestore.Instance{gone})
	})

	t.Run("Remove deletes a gone row that has not beaten since", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		seen := storeAt(time.Minute)
		a := f.instance("http://node-a:8080", seen)
		beat(f, a)
		remove(f, a.Node, storeAt(time.Hour), false)
		checkEqual(t, "instances after Remove of a live row", list(f, f.ctx), []profilestore.Instance{a})

		// Found gone, then back: live again, so not removed.
		markGone(f, a.Node, seen, storeAt(5*time.Minute), true)
		back := f.instance(a.Node, storeAt(6*time.Minute))
		beat(f, back)
		remove(f, a.Node, seen, false)
		checkEqual(t, "instances after Remove of a row that beat again", list(f, f.ctx), []profilestore.Instance{back})

		// Gone again, but seen after what the remover read: kept.
		goneAt := storeAt(10 * time.Minute)
		markGone(f, a.Node, back.SeenAt, goneAt, true)
		remove(f, a.Node, back.SeenAt.Add(-time.Second), false)
		gone := back
		gone.GoneAt = &goneAt
		checkEqual(t, "instances after Remove seen by an earlier time", list(f, f.ctx), []profilestore.Instance{gone})

		remove(f, "http://node-z:8080", storeAt(time.Hour), false)
		remove(f, a.Node, back.SeenAt.In(storeZone), true)
		if got := list(f, f.ctx); len(got) != 0 {
			t.Fatalf("instances after Remove = %+v, want none", got)
		}
		remove(f, a.Node, storeAt(time.Hour), false)
	})

	t.Run("List orders by node and includes gone rows", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		// Upper case, a prefix, a digit and another scheme: byte order, which
		// a linguistic collation would not keep.
		nodes := []string{"http://node-b:8080", "http://Node-C:8080", "https://node-0", "http://node-a:8080", "http://node-a:80", "http://node_a:8080"}
		byNode := map[string]profilestore.Instance{}
		for i, node := range nodes {
			inst := f.instance(node, storeAt(time.Duration(i)*time.Minute))
			beat(f, inst)
			byNode[node] = inst
		}
		goneAt := storeAt(time.Hour)
		markGone(f, "http://node-a:80", storeAt(time.Hour), goneAt, true)
		gone := byNode["http://node-a:80"]
		gone.GoneAt = &goneAt
		byNode[gone.Node] = gone

		sorted := slices.Sorted(slices.Values(nodes))
		want := make([]profilestore.Instance, len(sorted))
		for i, node := range sorted {
			want[i] = byNode[node]
		}
		got := list(f, f.ctx)
		checkIDs(t, "nodes", ids(got, instanceNode), sorted)
		checkEqual(t, "instances", got, want)
	})

	t.Run("calls join the unit of work", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a := f.instance("http://node-a:8080", storeAt(time.Minute))
		beat(f, a)
		g := f.instance("http://node-g:8080", storeAt(time.Minute))
		beat(f, g)
		gAt := storeAt(30 * time.Minute)
		markGone(f, g.Node, g.SeenAt, gAt, true)
		g.GoneAt = &gAt
		b := f.instance("http://node-b:8080", storeAt(2*time.Minute))
		next := f.instance(a.Node, storeAt(3*time.Minute))
		goneAt := storeAt(time.Hour)

		unitWrites := func(ctx context.Context, tx storage.Store) error {
			if replaced, err := tx.Instances().Beat(ctx, b); err != nil || replaced != nil {
				t.Fatalf("Beat of a new node in the unit: %v, %v", replaced, err)
			}
			if ok, err := tx.Instances().MarkGone(ctx, a.Node, a.SeenAt, goneAt); err != nil || !ok {
				t.Fatalf("MarkGone in the unit: %v, %v", ok, err)
			}
			if ok, err := tx.Instances().Remove(ctx, g.Node, g.SeenAt); err != nil || !ok {
				t.Fatalf("Remove in the unit: %v, %v", ok, err)
			}
			goneA := a
			goneA.GoneAt = &goneAt
			checkEqual(t, "instances in the unit", list(f, ctx), []profilestore.Instance{goneA, b})
			return errRollback
		}

		// A call that did not join its unit would wait for it on SQLite,
		// whose one connection the unit holds.
		storeWithin(t, "instance calls in units", func() {
			// Every write of a unit that fails is undone, and the unit's own
			// reads see its writes.
			err := inUnit(f.ctx, f.s, unitWrites)
			if !errors.Is(err, errRollback) {
				t.Fatalf("unit: %v", err)
			}
			checkEqual(t, "instances after a rolled-back unit", list(f, f.ctx), []profilestore.Instance{a, g})

			err = inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				replaced, err := tx.Instances().Beat(ctx, next)
				if err != nil || replaced == nil {
					t.Fatalf("Beat of a known node in the unit: %v, %v", replaced, err)
				}
				checkEqual(t, "row replaced in the unit", *replaced, a)
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				t.Fatalf("unit: %v", err)
			}
			checkEqual(t, "instances after a rolled-back beat", list(f, f.ctx), []profilestore.Instance{a, g})

			f.must("unit", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				_, err := tx.Instances().Beat(ctx, b)
				return err
			}))
			checkEqual(t, "instances after a committed unit", list(f, f.ctx), []profilestore.Instance{a, b, g})
		})
	})

	t.Run("concurrent Beats of distinct nodes all land", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		want := make([]profilestore.Instance, instanceRaces)
		for i := range want {
			want[i] = f.instance("http://node-"+string(rune('a'+i))+":8080", storeAt(time.Duration(i)*time.Second))
		}
		replaced := make([]*profilestore.Instance, instanceRaces)
		storeWithin(t, "concurrent Beats of distinct nodes", func() {
			errs := runConcurrently(instanceRaces, func(i int) error {
				var err error
				replaced[i], err = f.s.Instances().Beat(f.ctx, want[i]) // each goroutine writes its own element
				return err
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("Beat %d: %v", i, err)
				}
			}
		})
		for i, r := range replaced {
			if r != nil {
				t.Errorf("Beat %d of a new node returned %+v, want nil", i, *r)
			}
		}
		checkEqual(t, "instances after concurrent beats", list(f, f.ctx), want)
	})

	// Two processes claiming one NODE_URL is a misconfiguration, but the
	// registry must still take their beats one at a time: each returns the
	// row of the beat before it, so no beat is lost or returned twice.
	t.Run("concurrent Beats of one node: each replaces the one before", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		node := "http://node-a:8080"
		beats := make([]profilestore.Instance, instanceRaces)
		for i := range beats {
			beats[i] = f.instance(node, storeAt(time.Duration(i)*time.Second))
		}
		replaced := make([]*profilestore.Instance, instanceRaces)
		storeWithin(t, "concurrent Beats of one node", func() {
			errs := runConcurrently(instanceRaces, func(i int) error {
				// Half in units of their own, so that on PostgreSQL a
				// beat's lock is held until its unit commits.
				if i%2 == 0 {
					return inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
						var err error
						replaced[i], err = tx.Instances().Beat(ctx, beats[i])
						return err
					})
				}
				var err error
				replaced[i], err = f.s.Instances().Beat(f.ctx, beats[i])
				return err
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("Beat %d: %v", i, err)
				}
			}
		})
		got := list(f, f.ctx)
		if len(got) != 1 {
			t.Fatalf("instances after concurrent beats of one node = %+v, want one", got)
		}
		// The beats form one chain: the first replaced nothing, every other
		// replaced a distinct beat, and the last is the row that stays.
		seen := map[string]int{got[0].ID: 1}
		first := 0
		for i, r := range replaced {
			if r == nil {
				first++
				continue
			}
			if r.Node != node {
				t.Errorf("Beat %d replaced a row of node %q", i, r.Node)
			}
			seen[r.ID]++
		}
		if first != 1 {
			t.Errorf("%d beats replaced nothing, want exactly one", first)
		}
		for _, b := range beats {
			if seen[b.ID] != 1 {
				t.Errorf("beat %s was replaced or kept %d times, want once", b.ID, seen[b.ID])
			}
		}
	})
}

// instance returns a live instance of node, started an hour before it was
// last seen.
func (f storeFixture) instance(node string, seen time.Time) profilestore.Instance {
	return profilestore.Instance{
		Node: node, ID: storeID("ins"), Capacity: 8, Running: 3,
		Version: "v1.4.2", Engine: "Chromium 131.0.6778.85",
		StartedAt: seen.Add(-time.Hour), SeenAt: seen,
	}
}

func instanceNode(i profilestore.Instance) string { return i.Node }
