package browserdata

import (
	"archive/tar"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// Bounds of an archive's names and entries, the same for every
// PROFILE_DATA_MAX: they follow from what a user-data directory is and
// from what a filesystem can hold, not from how much may be stored.
const (
	// MaxEntries bounds the entries of an archive, dropped ones included
	// (each must be read to be dropped). The files a profile keeps number
	// in the hundreds for a fresh profile and in the low thousands for one
	// used for years; each entry is an inode and some time at every
	// launch, so tens of thousands of tiny entries are an attack on the
	// host, not a profile. An archive with its caches left in may come
	// near the bound: the service's own archives carry no caches, and a
	// client's need not.
	MaxEntries = 20_000
	// MaxNameLen bounds an entry's name in bytes: Chromium's deepest paths
	// take a few hundred.
	MaxNameLen = 1024
	// MaxComponentLen bounds each component of a name in bytes: no Linux
	// filesystem stores a longer file name (NAME_MAX), so the launch could
	// not unpack one.
	MaxComponentLen = 255
)

// EntryName checks an archive entry's type and name and returns the name
// cleaned, relative, with "/" as separator and without a trailing slash;
// "" is the archive's root, which callers leave out. Only regular files
// and directories are allowed; names that are absolute, contain "..", a
// backslash or NUL, are not UTF-8, are longer than MaxNameLen or have a
// component longer than MaxComponentLen are refused with a domain
// validation error naming the entry.
func EntryName(hdr *tar.Header) (string, error) {
	raw := hdr.Name
	refuse := func(why string) error {
		return domain.Invalid("data", fmt.Sprintf("entry %s: %s", quoteEntry(raw), why))
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink:
		return "", refuse("symbolic links are not allowed")
	case tar.TypeLink:
		return "", refuse("hard links are not allowed")
	case tar.TypeChar, tar.TypeBlock:
		return "", refuse("devices are not allowed")
	case tar.TypeFifo:
		return "", refuse("named pipes are not allowed")
	default:
		return "", refuse(fmt.Sprintf("entry type %q is not allowed: only files and directories", hdr.Typeflag))
	}
	switch {
	case len(raw) > MaxNameLen:
		return "", refuse(fmt.Sprintf("the name is longer than %d bytes", MaxNameLen))
	case !utf8.ValidString(raw):
		return "", refuse("the name is not UTF-8")
	case strings.ContainsRune(raw, 0):
		return "", refuse("the name contains NUL")
	case strings.ContainsRune(raw, '\\'):
		return "", refuse("the name contains a backslash")
	case strings.HasPrefix(raw, "/"):
		return "", refuse("absolute paths are not allowed")
	}
	var parts []string
	for _, p := range strings.Split(raw, "/") {
		switch {
		case p == "" || p == ".":
		case p == "..":
			return "", refuse(`".." is not allowed in a path`)
		case len(p) > MaxComponentLen:
			return "", refuse(fmt.Sprintf("a component of the name is %d bytes long, more than the %d a file name may have", len(p), MaxComponentLen))
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 && hdr.Typeflag != tar.TypeDir {
		return "", refuse("a file needs a name")
	}
	return strings.Join(parts, "/"), nil
}

// quoteEntry quotes a name for a message, shortened when it is longer than
// any name allowed (a tar name may run to a megabyte).
func quoteEntry(raw string) string {
	if len(raw) <= MaxNameLen {
		return fmt.Sprintf("%q", raw)
	}
	cut := MaxNameLen / 4
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", raw[:cut], len(raw))
}

// nodeKind is what a name stands for in a Tree.
type nodeKind uint8

const (
	nodeFile nodeKind = iota + 1
	nodeDir
	// nodeParent is a directory that no entry named yet but that holds an
	// entry: unpacking creates it.
	nodeParent
)

// Tree records the names of one archive's entries, to refuse an archive
// that cannot be unpacked as it says: a name given twice (which of the two
// would the browser get?), or a name that is a file and a directory at once
// (entry "Default/x" a file, and "Default/x/y"). The zero value is empty
// and ready. It holds every name added and their parents.
type Tree struct {
	nodes map[string]nodeKind
}

// Add records an entry by its cleaned name (as EntryName returns it, not
// ""), or refuses it with a domain validation error naming the entry.
func (t *Tree) Add(name string, dir bool) error {
	if t.nodes == nil {
		t.nodes = map[string]nodeKind{}
	}
	kind := nodeFile
	if dir {
		kind = nodeDir
	}
	switch prev := t.nodes[name]; {
	case prev == 0:
	case prev == nodeParent && dir:
		// A directory named after its contents: tar's order is free.
		t.nodes[name] = nodeDir
		return nil
	case prev == kind:
		return domain.Invalid("data", fmt.Sprintf("entry %q appears twice in the archive", name))
	default:
		return domain.Invalid("data", fmt.Sprintf("entry %q is both a file and a directory in the archive", name))
	}
	t.nodes[name] = kind
	for p := name; strings.Contains(p, "/"); {
		p = p[:strings.LastIndex(p, "/")]
		switch t.nodes[p] {
		case 0:
			t.nodes[p] = nodeParent
			continue
		case nodeFile:
			return domain.Invalid("data", fmt.Sprintf("entry %q: %q is a file in the archive and cannot hold it", name, p))
		}
		// A directory already recorded has its parents recorded too.
		break
	}
	return nil
}
