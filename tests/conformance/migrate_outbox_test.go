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
// outbox to a table of its own keeps every undispatched event claimable,
// and only those.
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
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if hasIndex(t, s, "outbox_events_undispatched_idx") || !hasTable(t, s, "outbox_pending") {
			t.Fatal("the outbox was not moved to outbox_pending")
		}
		claimed, err := s.Outbox().ClaimUndispatched(ctx, 10)
		if err != nil {
			t.Fatalf("ClaimUndispatched: %v", err)
		}
		var ids []string
		for _, e := range claimed {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, []string{"evt_2", "evt_4"}) {
			t.Fatalf("claimable after the migration: %v, want evt_2 and evt_4", ids)
		}
		listed, err := s.Outbox().ListAfter(ctx, "", 10)
		if err != nil || len(listed) != 4 || listed[3].ID != "evt_4" {
			t.Fatalf("outbox after the migration: %+v %v", listed, err)
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
