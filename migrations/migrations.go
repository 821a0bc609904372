// Package migrations owns the database schema: one ordered set of SQL
// migrations per dialect, embedded in the binary. Each file follows bun's
// naming (<version>_<name>.tx.up.sql); the ".tx." part makes the whole file
// run in one transaction, so a migration that fails leaves nothing behind.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// SQLite holds the SQLite migrations at its root.
var SQLite = sub("sqlite")

// Postgres holds the PostgreSQL migrations at its root.
var Postgres = sub("postgres")

func sub(dir string) fs.FS {
	fsys, err := fs.Sub(files, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path, which would be a typo above.
		panic(err)
	}
	return fsys
}
