// Package migrations owns the database schema: one ordered set of SQL
// migrations per dialect, embedded in the binary. Each file follows bun's
// naming (<version>_<name>.tx.up.sql); the ".tx." part makes the whole file
// run in one transaction, so a migration that fails leaves nothing behind.
//
// A migration that both dialects write alike is one file in shared/, which
// each dialect's set includes; the others are in sqlite/ and postgres/.
// Versions are unique across the three folders.
package migrations

import (
	"embed"
	"errors"
	"io/fs"
	"slices"
	"strings"
)

//go:embed sqlite/*.sql postgres/*.sql shared/*.sql
var files embed.FS

// SQLite holds the SQLite migrations at its root.
var SQLite fs.FS = union{sub("sqlite"), sub("shared")}

// Postgres holds the PostgreSQL migrations at its root.
var Postgres fs.FS = union{sub("postgres"), sub("shared")}

func sub(dir string) fs.FS {
	fsys, err := fs.Sub(files, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path, which would be a typo above.
		panic(err)
	}
	return fsys
}

// union is its folders' files at one root, listed together by name.
type union []fs.FS

func (u union) Open(name string) (fs.File, error) {
	for _, fsys := range u {
		f, err := fsys.Open(name)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (u union) ReadDir(name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for _, fsys := range u {
		entries, err := fs.ReadDir(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}
