package testenv

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// DatabaseURLVariable names the variable that points tests at a PostgreSQL
// database.
const DatabaseURLVariable = "TEST_DATABASE_URL"

// PostgresURL returns a URL of TEST_DATABASE_URL whose connections work in a
// fresh schema of their own, dropped when the test ends, so that tests never
// see each other's tables. It skips the test when the variable is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(DatabaseURLVariable)
	if raw == "" {
		t.Skip(DatabaseURLVariable + " is not set")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", DatabaseURLVariable, err)
	}
	admin, err := sql.Open("pgx", raw)
	if err != nil {
		t.Fatalf("%s: %v", DatabaseURLVariable, err)
	}
	t.Cleanup(func() { _ = admin.Close() })

	schema := UniqueName("test_")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The name is ours (letters, digits, underscore), so quoting it is enough.
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		t.Fatalf("postgres at %s: create schema: %v", u.Redacted(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP SCHEMA "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	// pgx sends unknown URL parameters as run-time parameters, so every
	// connection of the returned URL starts with this search_path.
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// SQLiteURL returns the URL of a new SQLite database file in the test's
// temporary directory.
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite://" + filepath.Join(t.TempDir(), "test.db")
}
