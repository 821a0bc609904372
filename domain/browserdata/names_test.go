package browserdata

import (
	"archive/tar"
	"strings"
	"testing"
)

func TestEntryName(t *testing.T) {
	long255 := strings.Repeat("a", 255)
	cases := []struct {
		raw  string
		typ  byte
		want string
	}{
		{"Default/Cookies", tar.TypeReg, "Default/Cookies"},
		{"./Default//Local Storage/./leveldb/", tar.TypeDir, "Default/Local Storage/leveldb"},
		{"./", tar.TypeDir, ""},
		{"Default/Local Storage/" + long255, tar.TypeReg, "Default/Local Storage/" + long255},
		{"Default/é", tar.TypeReg, "Default/é"},
	}
	for _, c := range cases {
		got, err := EntryName(&tar.Header{Name: c.raw, Typeflag: c.typ})
		if err != nil || got != c.want {
			t.Errorf("EntryName(%q) = %q, %v; want %q", c.raw, got, err, c.want)
		}
	}
}

func TestEntryNameRefusesNamesNoFilesystemHolds(t *testing.T) {
	cases := []struct {
		name, raw, want string
	}{
		{"a component of 256 bytes", "Default/Local Storage/" + strings.Repeat("a", 256), "256 bytes long, more than the 255"},
		{"a directory of 256 bytes", "Default/" + strings.Repeat("é", 128) + "/x", "256 bytes long, more than the 255"},
		{"a name of 1025 bytes", "Default/" + strings.Repeat(strings.Repeat("d", 200)+"/", 5) + "xxxxxxxxxxxx", "longer than 1024 bytes"},
		{"a file without a name", "./", "a file needs a name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "a name of 1025 bytes" && len(c.raw) != 1025 {
				t.Fatalf("fixture of %d bytes", len(c.raw))
			}
			_, err := EntryName(&tar.Header{Name: c.raw, Typeflag: tar.TypeReg})
			assertInvalid(t, err, c.want)
		})
	}
	// A name of a megabyte is named shortened, not echoed.
	_, err := EntryName(&tar.Header{Name: strings.Repeat("n", 1<<20), Typeflag: tar.TypeReg})
	assertInvalid(t, err, `"`+strings.Repeat("n", 256)+`"... (1048576 bytes)`)
}

func TestTree(t *testing.T) {
	type add struct {
		name string
		dir  bool
	}
	cases := []struct {
		name string
		adds []add
		// want is a part of the error of the last add; "" when all pass.
		want string
	}{
		{"files and their directories in any order", []add{{"Default/Local Storage/leveldb/000003.log", false}, {"Default/Local Storage/leveldb", true}, {"Default", true}, {"Default/Local Storage", true}, {"Default/Cookies", false}}, ""},
		{"a file, then a file inside it", []add{{"Default/x", false}, {"Default/x/y", false}}, `entry "Default/x/y": "Default/x" is a file in the archive and cannot hold it`},
		{"a file, then a file deeper inside it", []add{{"Default/x", false}, {"Default/x/y/z", false}}, `entry "Default/x/y/z": "Default/x" is a file`},
		{"a file inside, then the file", []add{{"Default/x/y", false}, {"Default/x", false}}, `entry "Default/x" is both a file and a directory`},
		{"a directory, then a file of its name", []add{{"Default/x", true}, {"Default/x", false}}, `entry "Default/x" is both a file and a directory`},
		{"a file, then a directory of its name", []add{{"Default/x", false}, {"Default/x", true}}, `entry "Default/x" is both a file and a directory`},
		{"a file twice", []add{{"Default/Cookies", false}, {"Default/Cookies", false}}, `entry "Default/Cookies" appears twice`},
		{"a directory twice", []add{{"Default", true}, {"Default", true}}, `entry "Default" appears twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tree Tree
			for i, a := range c.adds {
				err := tree.Add(a.name, a.dir)
				if i < len(c.adds)-1 || c.want == "" {
					if err != nil {
						t.Fatalf("Add(%q, %v): %v", a.name, a.dir, err)
					}
					continue
				}
				assertInvalid(t, err, c.want)
			}
		})
	}
}
