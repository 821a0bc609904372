package bunstore_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/migrations"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// The migration that made a team's profile count one row keeps each
// team's sum of profiles (its quota holds at the same place) and of
// changes (its list's version does not move).
func TestOneCountRowMigrationKeepsEveryCount(t *testing.T) {
	t.Parallel()
	for _, dialect := range []struct {
		name string
		url  func(testing.TB) string
		fsys fs.FS
	}{{"sqlite", testenv.SQLiteURL, migrations.SQLite}, {"postgres", testenv.PostgresURL, migrations.Postgres}} {
		t.Run(dialect.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := bunstore.Open(ctx, testenv.StoreOptions(t, dialect.url(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			earlier := fstest.MapFS{}
			files, err := fs.Glob(dialect.fsys, "*.up.sql")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if f < "20261211000001" {
					data, err := fs.ReadFile(dialect.fsys, f)
					if err != nil {
						t.Fatal(err)
					}
					earlier[f] = &fstest.MapFile{Data: data}
				}
			}
			if _, err := bunstore.MigrateFS(ctx, bunstore.DB(s), earlier); err != nil {
				t.Fatalf("migrate to the earlier schema: %v", err)
			}
			// tm_1 holds 4 profiles and 10 changes over four shards, tm_2
			// 1 and 3 in one.
			if _, err := bunstore.DB(s).ExecContext(ctx, `INSERT INTO team_profile_counts (team_id, shard, profiles, changes) VALUES
				('tm_1', 0, 2, 5), ('tm_1', 1, 1, 3), ('tm_1', 2, 0, 0), ('tm_1', 3, 1, 2), ('tm_2', 7, 1, 3)`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			for team, want := range map[string]string{"tm_1": "10", "tm_2": "3"} {
				if v, err := s.Profiles().ListVersion(ctx, team); err != nil || v != want {
					t.Fatalf("%s's list version after the migration: %q (%v), want %s", team, v, err, want)
				}
			}
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 1), 4); !isQuota(err, 4) {
				t.Fatalf("a fifth profile under a quota of 4: %v, want the quota refused", err)
			}
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 2), 5); err != nil {
				t.Fatalf("a fifth profile under a quota of 5: %v", err)
			}
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_2", 3), 2); err != nil {
				t.Fatalf("a second profile of tm_2 under a quota of 2: %v", err)
			}
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_2", 4), 2); !isQuota(err, 2) {
				t.Fatalf("a third profile of tm_2 under a quota of 2: %v, want the quota refused", err)
			}
			if v, err := s.Profiles().ListVersion(ctx, "tm_1"); err != nil || v != "11" {
				t.Fatalf("tm_1's list version after a create: %q (%v), want 11", v, err)
			}
		})
	}
}

func isQuota(err error, bound int) bool {
	return err != nil && err.Error() == team.QuotaReached(bound, "profiles").Error()
}
