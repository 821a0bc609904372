package browserdata

import "strings"

// ProfileDir is the one profile folder of a user-data directory that is
// kept: the browser is always started on it. Other profile folders would
// only take room, and "Local State" beside it, which could select them, is
// not kept either.
const ProfileDir = "Default"

// PreferencesName is the entry of the profile's preferences, which is kept
// only as CleanPreferences rewrites it.
const PreferencesName = ProfileDir + "/Preferences"

// keptKind says how a path of the allowlist is matched.
type keptKind int

const (
	// keptFile is one regular file.
	keptFile keptKind = iota
	// keptDatabase is a SQLite database: the file and its rollback journal
	// and write-ahead log (name-journal, name-wal), which hold transactions
	// the browser may not have folded into the file yet. The -shm index of
	// a WAL is left out: SQLite rebuilds it from the log.
	keptDatabase
	// keptTree is a directory and everything in it, but for caches and lock
	// files (see dropped) and the subtrees listed as skippedTree.
	keptTree
	// skippedTree is a directory inside a kept tree that is left out with
	// everything in it.
	skippedTree
)

// keptPath is one row of the allowlist: a path under ProfileDir, how it is
// matched, and why a profile keeps it (or, for a skippedTree, why not).
type keptPath struct {
	path string
	kind keptKind
	why  string
}

// allowlist is every path a stored profile keeps under ProfileDir: what a
// site or the person using the browser wrote (sign-ins, site storage,
// history, saved logins), never what changes what the browser runs, loads
// or where its traffic goes. Everything else of a user-data directory is
// dropped, in particular:
//   - "Local State" (outside the profile): chrome://flags experiments
//     (browser.enabled_labs_experiments), DNS-over-HTTPS servers, the
//     profile list;
//   - "Secure Preferences": extension settings and the MACs of protected
//     preferences;
//   - Extensions, Extension State, Extension Rules, Extension Scripts,
//     Local Extension Settings, Sync Extension Settings, Managed Extension
//     Settings, Extension Cookies: installed extensions and their storage;
//     an extension can set the proxy, read every page and rewrite requests;
//   - Web Applications, Network Persistent State, Reporting and NEL, and
//     every other file of the profile that no row names; Chromium recreates
//     what it needs;
//   - every profile folder other than Default (Profile 1, System Profile,
//     Guest Profile, ...).
var allowlist = []keptPath{
	{"Preferences", keptFile, "the profile's own settings (zoom, site permissions, startup pages); rewritten by CleanPreferences without the keys that are configuration"},
	{"Cookies", keptDatabase, "cookies, where Chromium before 96 kept them"},
	{"Network/Cookies", keptDatabase, "cookies: the signed-in sessions of the profile's accounts"},
	{"Network/TransportSecurity", keptFile, "HSTS state that sites set, so that the profile's visits stay on https as a returning browser's do"},
	{"History", keptDatabase, "visits and the list of downloads"},
	{"Favicons", keptDatabase, "icons of visited sites"},
	{"Top Sites", keptDatabase, "most visited sites of the new tab page"},
	{"Visited Links", keptFile, "colours visited links, as a returning browser's do"},
	{"Shortcuts", keptDatabase, "address bar suggestions learned from what was typed"},
	{"Login Data", keptDatabase, "saved passwords"},
	{"Login Data For Account", keptDatabase, "saved passwords of the signed-in account"},
	{"Web Data", keptDatabase, "autofill entries, addresses, cards and search engines"},
	{"Account Web Data", keptDatabase, "autofill data of the signed-in account"},
	{"Bookmarks", keptFile, "bookmarks (Chromium rewrites its own Bookmarks.bak from it)"},
	{"Sessions", keptTree, "open windows and tabs, restored at the next start"},
	{"Local Storage", keptTree, "localStorage of sites"},
	{"Session Storage", keptTree, "sessionStorage of the tabs that Sessions restores"},
	{"IndexedDB", keptTree, "IndexedDB of sites, and the blobs stored in it"},
	{"WebStorage", keptTree, "storage buckets of sites (IndexedDB and Cache Storage since Chromium 112)"},
	{"Storage", keptTree, "storage of sites by partition"},
	{"Storage/ext", skippedTree, "storage of extensions, which are not kept"},
	{"File System", keptTree, "files sites wrote through the File System API"},
	{"databases", keptTree, "WebSQL databases of sites"},
	{"Service Worker", keptTree, "service worker registrations and scripts (their caches, CacheStorage and ScriptCache, are dropped)"},
	{"blob_storage", keptTree, "blobs that site storage refers to"},
	{"shared_proto_db", keptTree, "state of browser features kept per profile (tab groups, notification schedules)"},
	{"Shared Dictionary", keptTree, "compression dictionaries sites registered"},
}

// allowed is the allowlist indexed for Kept: file names (a database's
// journal and log included), the trees by path with whether they are kept,
// and the directories that lead to kept files.
var allowed = func() (a struct {
	files   map[string]bool
	trees   map[string]bool
	parents map[string]bool
}) {
	a.files, a.trees, a.parents = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, k := range allowlist {
		switch k.kind {
		case keptFile:
			a.files[k.path] = true
		case keptDatabase:
			a.files[k.path] = true
			a.files[k.path+"-journal"] = true
			a.files[k.path+"-wal"] = true
		case keptTree:
			a.trees[k.path] = true
		case skippedTree:
			a.trees[k.path] = false
		}
		if k.kind != skippedTree {
			for p := k.path; strings.Contains(p, "/"); {
				p = p[:strings.LastIndex(p, "/")]
				a.parents[p] = true
			}
		}
	}
	return a
}()

// Kept reports whether an entry of a user-data directory belongs in a
// stored profile: it is on the allowlist, and neither a cache nor a lock
// file. name is a clean path relative to the user-data directory, with "/"
// as separator and without "." or ".." components; a directory's name ends
// in "/", so that a file cannot take the name of a kept directory (a file
// named "Default/IndexedDB" is not kept) nor the reverse. A directory is
// kept when something in it may be: Kept of a name implies Kept of its
// parent directory, so a walk may skip a directory that is not kept.
//
// Sanitize applies it to an upload, and the browser runtime to the data
// it unpacks and packs, so that data stored before a rule changed are
// held to it too.
func Kept(name string) bool {
	dir := strings.HasSuffix(name, "/")
	name = strings.TrimSuffix(name, "/")
	if name == "" || dropped(name, dir) {
		return false
	}
	if name == ProfileDir {
		return dir
	}
	rest, ok := strings.CutPrefix(name, ProfileDir+"/")
	if !ok {
		return false
	}
	if allowed.parents[rest] {
		return dir
	}
	if !dir && allowed.files[rest] {
		return true
	}
	// The deepest tree that holds the name decides: a skipped tree inside
	// a kept one wins.
	for p := rest; ; {
		if keep, ok := allowed.trees[p]; ok {
			if p == rest && !dir {
				// A file cannot stand where a kept directory is.
				return false
			}
			return keep
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
