package testenv

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/config"
)

// StoreOptions returns the bunstore options of an SQL DATABASE_URL, such as
// SQLiteURL and PostgresURL return, read by config as the service reads it.
func StoreOptions(t testing.TB, databaseURL string) bunstore.Options {
	t.Helper()
	db, err := config.ParseDatabaseURL(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	switch db.Kind {
	case config.DatabaseSQLite:
		return bunstore.Options{Dialect: bunstore.DialectSQLite, Path: db.Path}
	case config.DatabasePostgres:
		return bunstore.Options{Dialect: bunstore.DialectPostgres, DSN: db.URL}
	}
	t.Fatalf("%s is not an SQL database", db)
	return bunstore.Options{}
}
