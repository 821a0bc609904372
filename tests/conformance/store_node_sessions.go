package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// runProfileNodeSessions checks ListNodeSessions: an instance that starts
// again after a crash finds, in every team, the sessions it ran (whose
// Node is its NODE_URL), expired or not, and nothing else.
func runProfileNodeSessions(t *testing.T, newStore NewStore) {
	t.Run("ListNodeSessions spans teams, by id", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		now := storeAt(24 * time.Hour)
		teamA, teamB := storeID("tm"), storeID("tm")
		first := f.profile(teamA, "On node A", "a")
		first.Data = &profile.Data{Content: *f.content(99), UpdatedAt: storeAt(time.Hour)}
		first.Cookies = f.content(98)
		second := f.profile(teamB, "On node A too")
		expired := f.profile(teamA, "On node A, expired")
		other := f.profile(teamB, "On node B")
		starting := f.profile(teamA, "Starting: no node yet")
		idle := f.profile(teamB, "Idle")
		f.createProfiles(first, second, expired, other, starting, idle)
		sessions := map[string]*profile.Session{
			first.ID:    f.nodeSession(now, time.Hour, "http://node-a:8080"),
			second.ID:   f.nodeSession(now, time.Hour, "http://node-a:8080"),
			expired.ID:  f.nodeSession(now.Add(-3*time.Hour), time.Hour, "http://node-a:8080"),
			other.ID:    f.nodeSession(now, time.Hour, "http://node-b:8080"),
			starting.ID: f.nodeSession(now, time.Hour, ""),
		}
		// Started out of id order: the order is the profiles' ids.
		for _, p := range []profile.Profile{other, expired, starting, second, first} {
			f.start(p, sessions[p.ID])
		}

		got, err := f.s.Profiles().ListNodeSessions(f.ctx, "http://node-a:8080", 10)
		f.must("ListNodeSessions", err)
		checkIDs(t, "sessions of node A", profileIDs(got), []string{first.ID, second.ID, expired.ID})
		if len(got) > 0 && got[0].ID == first.ID {
			want := first
			want.Session = sessions[first.ID]
			checkEqual(t, "profile", got[0], want)
		}
		got, err = f.s.Profiles().ListNodeSessions(f.ctx, "http://node-a:8080", 2)
		f.must("ListNodeSessions with a limit", err)
		checkIDs(t, "first two sessions of node A", profileIDs(got), []string{first.ID, second.ID})
		for _, c := range []struct {
			what, node string
			limit      int
			want       []string
		}{
			{"sessions of node B", "http://node-b:8080", 10, []string{other.ID}},
			{"sessions of a node that runs none", "http://node-c:8080", 10, nil},
			{"sessions of no node", "", 10, nil},
			{"no session asked for", "http://node-a:8080", 0, nil},
		} {
			got, err := f.s.Profiles().ListNodeSessions(f.ctx, c.node, c.limit)
			f.must("ListNodeSessions "+c.what, err)
			checkIDs(t, c.what, profileIDs(got), c.want)
		}

		// A session that ends leaves the list, in the unit that ends it
		// and then for everyone.
		f.must("unit", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			ok, err := tx.Profiles().SwapSession(ctx, first.TeamID, first.ID, profilestore.SessionSwap{ExpectSessionID: sessions[first.ID].ID})
			if err != nil || !ok {
				t.Fatalf("ending the session of %s: %v %v", first.ID, ok, err)
			}
			got, err := tx.Profiles().ListNodeSessions(ctx, "http://node-a:8080", 10)
			f.must("ListNodeSessions in the unit", err)
			checkIDs(t, "sessions of node A in the unit that ended one", profileIDs(got), []string{second.ID, expired.ID})
			return nil
		}))
		got, err = f.s.Profiles().ListNodeSessions(f.ctx, "http://node-a:8080", 10)
		f.must("ListNodeSessions after a session ended", err)
		checkIDs(t, "sessions of node A after one ended", profileIDs(got), []string{second.ID, expired.ID})
	})
}

// nodeSession returns a session that node runs, with its relay address and
// token hash, started at start.
func (f storeFixture) nodeSession(start time.Time, ttl time.Duration, node string) *profile.Session {
	s := f.session(start, ttl)
	s.CDPTokenHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	s.Node = node
	return s
}
