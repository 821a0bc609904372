package conformance_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// before is the migrations of fsys older than version.
func before(t *testing.T, fsys fs.FS, version string) fstest.MapFS {
	t.Helper()
	files, err := fs.Glob(fsys, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, f := range files {
		if f < version {
			data, err := fs.ReadFile(fsys, f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = &fstest.MapFile{Data: data}
		}
	}
	return out
}

// The migration that moved "not yet fanned out" from a column of the
// outbox to a table of its own lists every undispatched event there, and
// only those.
func TestOutboxPendingMigrationKeepsUndispatchedEvents(t *testing.T) {
	forEachSQLDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := openUnmigrated(t, url)
		if _, err := bunstore.MigrateFS(ctx, s.DB(), before(t, migrationsOf(s), "20261206000001")); err != nil {
			t.Fatalf("migrate to the earlier schema: %v", err)
		}
		insert := `INSERT INTO outbox_events (id, team_id, type, occurred_at, data, created_at, dispatched_at) VALUES
			('evt_1', 'tm_1', 'profile.created', ?, '{}', ?, ?),
			('evt_2', 'tm_1', 'profile.created', ?, '{}', ?, NULL),
			('evt_3', 'tm_2', 'profile.deleted', ?, '{}', ?, ?),
			('evt_4', 'tm_2', 'profile.created', ?, '{}', ?, NULL)`
		at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		if _, err := s.DB().NewRaw(insert, at, at, at, at, at, at, at, at, at, at, at).Exec(ctx); err != nil {
			t.Fatalf("write events in the earlier schema: %v", err)
		}
		if _, err := bunstore.MigrateFS(ctx, s.DB(), before(t, migrationsOf(s), "20261207000001")); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if hasIndex(t, s, "outbox_events_undispatched_idx") {
			t.Fatal("the outbox still has its index of undispatched events")
		}
		var ids []string
		if err := s.DB().NewRaw("SELECT id FROM outbox_pending ORDER BY id").Scan(ctx, &ids); err != nil {
			t.Fatalf("read outbox_pending: %v", err)
		}
		if !slices.Equal(ids, []string{"evt_2", "evt_4"}) {
			t.Fatalf("pending after the migration: %v, want evt_2 and evt_4", ids)
		}
	})
}

// The migration that queues an event's deliveries in the unit that writes
// it fans out the events still pending as the fan-out did: to each enabled
// endpoint of their team that takes their type and was created before
// them, with the body the service itself makes of the event, due at once.
// Afterwards nothing is left to fan out.
func TestQueuedDeliveriesMigrationFansOutThePendingEvents(t *testing.T) {
	forEachSQLDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := openUnmigrated(t, url)
		if _, err := bunstore.MigrateFS(ctx, s.DB(), before(t, migrationsOf(s), "20261213000001")); err != nil {
			t.Fatalf("migrate to the earlier schema: %v", err)
		}
		fraction := time.Date(2030, 1, 1, 12, 0, 0, 120500000, time.UTC)
		whole := time.Date(2030, 1, 1, 12, 0, 1, 0, time.UTC)
		events := `INSERT INTO outbox_events (id, team_id, type, occurred_at, data, created_at) VALUES
			('evt_1', 'tm_1', 'profile.created', ?, '{"profile":{"id":"prf_1","name":"say \"hi\""}}', ?),
			('evt_2', 'tm_1', 'profile.deleted', ?, '{"profile":{"id":"prf_1"}}', ?),
			('evt_3', 'tm_1', 'profile.created', ?, '{}', ?),
			('evt_4', 'tm_1', 'profile.created', ?, '{}', ?),
			('evt_5', 'tm_2', 'profile.created', ?, '{}', ?)`
		if _, err := s.DB().NewRaw(events, fraction, fraction, whole, whole, fraction, fraction, fraction, fraction, fraction, fraction).Exec(ctx); err != nil {
			t.Fatalf("write events in the earlier schema: %v", err)
		}
		// evt_4 was fanned out already. (SQLite's trigger listed every
		// event; on PostgreSQL the service did.)
		for _, q := range []string{`DELETE FROM outbox_pending`, `INSERT INTO outbox_pending (id) VALUES ('evt_1'), ('evt_2'), ('evt_3'), ('evt_5')`} {
			if _, err := s.DB().NewRaw(q).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		endpoints := `INSERT INTO webhook_endpoints (id, team_id, url, events, secret_sealed, enabled, created_at, updated_at, max_in_flight, rate_limit, after_seq) VALUES
			('whk_all', 'tm_1', 'https://a.example.com', '["*"]', ?, TRUE, ?, ?, 16, 0, 0),
			('whk_del', 'tm_1', 'https://a.example.com', '["profile.deleted"]', ?, TRUE, ?, ?, 16, 0, 0),
			('whk_off', 'tm_1', 'https://a.example.com', '["*"]', ?, FALSE, ?, ?, 16, 0, 0),
			('whk_late', 'tm_1', 'https://a.example.com', '["*"]', ?, TRUE, ?, ?, 16, 0, (SELECT seq FROM outbox_events WHERE id = 'evt_2')),
			('whk_other', 'tm_2', 'https://a.example.com', '["profile.updated", "profile.created"]', ?, TRUE, ?, ?, 16, 0, 0)`
		sealed := []byte("sealed")
		var args []any
		for range 5 {
			args = append(args, sealed, whole, whole)
		}
		if _, err := s.DB().NewRaw(endpoints, args...).Exec(ctx); err != nil {
			t.Fatalf("write endpoints in the earlier schema: %v", err)
		}
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if hasTable(t, s, "outbox_pending") {
			t.Fatal("outbox_pending is still there")
		}
		listed, err := s.Outbox().ListAfter(ctx, "", 10)
		if err != nil || len(listed) != 5 {
			t.Fatalf("outbox after the migration: %+v %v", listed, err)
		}
		byID := map[string]event.Event{}
		for _, e := range listed {
			byID[e.ID] = e
		}
		for _, c := range []struct {
			team, endpoint string
			events         []string
		}{
			{"tm_1", "whk_all", []string{"evt_1", "evt_2", "evt_3"}},
			{"tm_1", "whk_del", []string{"evt_2"}},
			{"tm_1", "whk_off", nil},
			{"tm_1", "whk_late", []string{"evt_3"}},
			{"tm_2", "whk_other", []string{"evt_5"}},
		} {
			ds, err := s.Deliveries().List(ctx, c.team, c.endpoint, webhookstore.DeliveryFilter{Limit: 10})
			if err != nil {
				t.Fatalf("deliveries of %s: %v", c.endpoint, err)
			}
			var got []string
			for _, d := range slices.Backward(ds) {
				got = append(got, d.EventID)
				want, err := webhook.Payload(byID[d.EventID])
				if err != nil {
					t.Fatal(err)
				}
				if string(d.Payload) != string(want) {
					t.Errorf("%s's delivery of %s carries\n%s\nwant\n%s", c.endpoint, d.EventID, d.Payload, want)
				}
				if d.Status != webhook.StatusPending || d.EventType != byID[d.EventID].Type || d.TeamID != c.team || len(d.Attempts) != 0 {
					t.Errorf("%s's delivery of %s: %+v, want a pending delivery of the event with no attempt", c.endpoint, d.EventID, d)
				}
			}
			if !slices.Equal(got, c.events) {
				t.Errorf("%s's deliveries are of %v, want %v", c.endpoint, got, c.events)
			}
		}
		now := whole.Add(time.Hour)
		claimed, err := s.Deliveries().Claim(ctx, webhookstore.DeliveryClaim{Owner: "dsp_1", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
		if err != nil || len(claimed) != 6 {
			t.Fatalf("claimed %d deliveries (%v), want all 6 due", len(claimed), err)
		}
	})
}

// The migration that keeps each team's profile count counts the profiles
// each team already holds, so that quotas hold from its first create.
func TestProfileCountMigrationCountsExistingProfiles(t *testing.T) {
	forEachSQLDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := openUnmigrated(t, url)
		if _, err := bunstore.MigrateFS(ctx, s.DB(), before(t, migrationsOf(s), "20261212000001")); err != nil {
			t.Fatalf("migrate to the earlier schema: %v", err)
		}
		at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		if _, err := s.DB().NewRaw(`INSERT INTO teams (id, name, created_at) VALUES ('tm_1', 'One', ?), ('tm_2', 'Two', ?), ('tm_3', 'Three', ?)`, at, at, at).Exec(ctx); err != nil {
			t.Fatalf("write teams in the earlier schema: %v", err)
		}
		for i, teamID := range []string{"tm_1", "tm_1", "tm_1", "tm_2"} {
			insert := `INSERT INTO profiles (id, team_id, name, template_id, browser, user_agent, platform, locale, timezone,
				screen_width, screen_height, device, notes, version, created_by, created_at, updated_at, tags)
				VALUES (?, ?, 'p', 'tpl_chrome_win_us', 'chromium', 'ua', 'Win32', 'en-US', 'UTC', 1920, 1080, '', '', 1, 'usr_1', ?, ?, '[]')`
			if _, err := s.DB().NewRaw(insert, fmt.Sprintf("prf_%d", i), teamID, at, at).Exec(ctx); err != nil {
				t.Fatalf("write a profile in the earlier schema: %v", err)
			}
		}
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		var counts []int
		for _, teamID := range []string{"tm_1", "tm_2", "tm_3"} {
			n, err := s.Profiles().Count(ctx, teamID)
			if err != nil {
				t.Fatalf("Count: %v", err)
			}
			counts = append(counts, n)
		}
		if !slices.Equal(counts, []int{3, 1, 0}) {
			t.Fatalf("counts after the migration: %v, want [3 1 0]", counts)
		}
	})
}
