package migrations

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// names lists the .sql files at the root of fsys.
func names(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// version is a migration file's version: the part before its first "_".
func version(name string) string {
	v, _, _ := strings.Cut(name, "_")
	return v
}

func TestEachDialectRunsItsOwnAndTheSharedMigrationsInVersionOrder(t *testing.T) {
	t.Parallel()
	shared := names(t, sub("shared"))
	if len(shared) == 0 {
		t.Fatal("shared/ holds no migration")
	}
	seen := map[string]string{}
	for _, dir := range []string{"sqlite", "postgres", "shared"} {
		for _, n := range names(t, sub(dir)) {
			if other, ok := seen[version(n)]; ok && (dir == "shared" || other == "shared") {
				t.Errorf("version %s is in shared/ and %s/: a dialect would run only one", version(n), dir)
			}
			seen[version(n)] = dir
		}
	}
	for dir, fsys := range map[string]fs.FS{"sqlite": SQLite, "postgres": Postgres} {
		want := slices.Concat(names(t, sub(dir)), shared)
		slices.Sort(want)
		got, err := fs.Glob(fsys, "*.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s runs %v, want %v", dir, got, want)
		}
		for _, n := range shared {
			own, err := fs.ReadFile(sub("shared"), n)
			if err != nil {
				t.Fatal(err)
			}
			if read, err := fs.ReadFile(fsys, n); err != nil || string(read) != string(own) {
				t.Errorf("%s reads %s as %q (%v), want the shared file", dir, n, read, err)
			}
		}
		if _, err := fsys.Open("missing.up.sql"); !strings.Contains(err.Error(), "not exist") {
			t.Errorf("%s opens a missing file with %v, want not exist", dir, err)
		}
	}
}
