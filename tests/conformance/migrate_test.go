package conformance_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/migrations"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// forEachSQLDialect runs fn on a fresh, empty SQLite database and, when
// TEST_DATABASE_URL is set, a fresh PostgreSQL schema.
func forEachSQLDialect(t *testing.T, fn func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, testenv.SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, testenv.PostgresURL(t)) })
}

func openUnmigrated(t *testing.T, url string) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), testenv.StoreOptions(t, url))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// recorded returns the names bun has recorded as applied, with repeats.
func recorded(t *testing.T, db *bun.DB) []string {
	t.Helper()
	var names []string
	if err := db.NewRaw("SELECT name FROM bun_migrations ORDER BY name").Scan(context.Background(), &names); err != nil {
		t.Fatalf("read bun_migrations: %v", err)
	}
	return names
}

// hasIndex reports whether the current schema has an index called name.
func hasIndex(t *testing.T, s *bunstore.Store, name string) bool {
	t.Helper()
	query := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	if s.Dialect() == bunstore.DialectPostgres {
		query = "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?"
	}
	var n int
	if err := s.DB().NewRaw(query, name).Scan(context.Background(), &n); err != nil {
		t.Fatalf("look up index %s: %v", name, err)
	}
	return n > 0
}

// hasTable reports whether the current schema has a table called name.
func hasTable(t *testing.T, s *bunstore.Store, name string) bool {
	t.Helper()
	query := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	if s.Dialect() == bunstore.DialectPostgres {
		query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?"
	}
	var n int
	if err := s.DB().NewRaw(query, name).Scan(context.Background(), &n); err != nil {
		t.Fatalf("look up table %s: %v", name, err)
	}
	return n > 0
}

func TestFailedMigrationIsNotRecorded(t *testing.T) {
	forEachSQLDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := openUnmigrated(t, url)
		fsys := fstest.MapFS{
			"20300101000001_items.tx.up.sql": {Data: []byte(
				"CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL);\n" +
					"INSERT INTO items (id, name) VALUES (1, 'a'), (2, 'a'), (3, 'b');\n")},
			// Two statements: the first succeeds, the second fails on the
			// duplicate names, and the transaction must take both back.
			"20300101000002_unique_names.tx.up.sql": {Data: []byte(
				"CREATE TABLE item_audit (id integer PRIMARY KEY);\n" +
					"CREATE UNIQUE INDEX items_name_key ON items (name);\n")},
		}

		applied, err := bunstore.MigrateFS(ctx, s.DB(), fsys)
		if err == nil {
			t.Fatal("MigrateFS succeeded over duplicate names")
		}
		if !strings.Contains(err.Error(), "20300101000002") {
			t.Errorf("error does not name the failed migration: %v", err)
		}
		if !slices.Equal(applied, []string{"20300101000001_items"}) {
			t.Errorf("applied = %v, want only the first migration", applied)
		}
		if got := recorded(t, s.DB()); !slices.Equal(got, []string{"20300101000001"}) {
			t.Fatalf("bun_migrations = %v, want only the first migration", got)
		}
		if hasIndex(t, s, "items_name_key") || hasTable(t, s, "item_audit") {
			t.Fatal("the failed migration left part of its work behind")
		}

		if _, err := s.DB().NewRaw("DELETE FROM items WHERE id = 2").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		applied, err = bunstore.MigrateFS(ctx, s.DB(), fsys)
		if err != nil {
			t.Fatalf("MigrateFS after the fix: %v", err)
		}
		if !slices.Equal(applied, []string{"20300101000002_unique_names"}) {
			t.Errorf("applied = %v, want the second migration", applied)
		}
		if got := recorded(t, s.DB()); !slices.Equal(got, []string{"20300101000001", "20300101000002"}) {
			t.Fatalf("bun_migrations = %v, want both migrations once", got)
		}
		if !hasIndex(t, s, "items_name_key") || !hasTable(t, s, "item_audit") {
			t.Fatal("the second migration did not run")
		}
	})
}

// embeddedNames lists the migrations of fsys as bun names them.
func embeddedNames(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	files, err := fs.Glob(fsys, "*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	var names []string
	for _, f := range files {
		name, _, _ := strings.Cut(f, ".")
		names = append(names, name)
	}
	return names
}

// migrationsOf are the embedded migrations of s's dialect.
func migrationsOf(s *bunstore.Store) fs.FS {
	if s.Dialect() == bunstore.DialectPostgres {
		return migrations.Postgres
	}
	return migrations.SQLite
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	forEachSQLDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := openUnmigrated(t, url)
		fsys := migrationsOf(s)
		want := embeddedNames(t, fsys)

		applied, err := s.Migrate(ctx)
		if err != nil {
			t.Fatalf("first Migrate: %v", err)
		}
		if !slices.Equal(applied, want) {
			t.Fatalf("first Migrate applied %v, want %v", applied, want)
		}
		applied, err = s.Migrate(ctx)
		if err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		if len(applied) != 0 {
			t.Fatalf("second Migrate applied %v, want nothing", applied)
		}
		if got := recorded(t, s.DB()); len(got) != len(want) {
			t.Fatalf("bun_migrations = %v, want %d rows", got, len(want))
		}
	})
}

func TestConcurrentMigrateOnPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	const instances = 4
	stores := make([]*bunstore.Store, instances)
	for i := range stores {
		stores[i] = openUnmigrated(t, url)
	}
	want := embeddedNames(t, migrations.Postgres)

	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		applied []string
	)
	for _, s := range stores {
		wg.Go(func() {
			<-start
			names, err := s.Migrate(context.Background())
			if err != nil {
				t.Errorf("Migrate: %v", err)
			}
			mu.Lock()
			applied = append(applied, names...)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	slices.Sort(applied)
	if !slices.Equal(applied, want) {
		t.Fatalf("the instances applied %v together, want each of %v exactly once", applied, want)
	}
	if got := recorded(t, stores[0].DB()); !slices.Equal(got, embeddedIDs(want)) {
		t.Fatalf("bun_migrations = %v, want each migration once", got)
	}
}

// embeddedIDs turns bun names ("<id>_<comment>") into the ids bun records.
func embeddedIDs(names []string) []string {
	ids := make([]string, 0, len(names))
	for _, n := range names {
		id, _, _ := strings.Cut(n, "_")
		ids = append(ids, id)
	}
	return ids
}
