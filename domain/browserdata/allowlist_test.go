package browserdata

import (
	"strings"
	"testing"
)

// keptCases are names of a real Chromium user-data directory (a directory's
// name ends in "/") and whether a stored profile keeps them.
var keptCases = []struct {
	name string
	kept bool
}{
	// The profile folder and what is kept in it.
	{"Default/", true},
	{"Default/Preferences", true},
	{"Default/Cookies", true},
	{"Default/Cookies-journal", true},
	{"Default/Cookies-wal", true},
	{"Default/Network/", true},
	{"Default/Network/Cookies", true},
	{"Default/Network/Cookies-journal", true},
	{"Default/Network/TransportSecurity", true},
	{"Default/History", true},
	{"Default/History-journal", true},
	{"Default/Favicons", true},
	{"Default/Favicons-journal", true},
	{"Default/Top Sites", true},
	{"Default/Top Sites-journal", true},
	{"Default/Visited Links", true},
	{"Default/Shortcuts", true},
	{"Default/Shortcuts-journal", true},
	{"Default/Login Data", true},
	{"Default/Login Data-journal", true},
	{"Default/Login Data For Account", true},
	{"Default/Login Data For Account-journal", true},
	{"Default/Web Data", true},
	{"Default/Web Data-journal", true},
	{"Default/Account Web Data", true},
	{"Default/Account Web Data-journal", true},
	{"Default/Bookmarks", true},
	{"Default/Sessions/", true},
	{"Default/Sessions/Session_13380000000000000", true},
	{"Default/Sessions/Tabs_13380000000000000", true},
	{"Default/Local Storage/", true},
	{"Default/Local Storage/leveldb/", true},
	{"Default/Local Storage/leveldb/000003.log", true},
	{"Default/Local Storage/leveldb/LOCK", true},
	{"Default/Session Storage/MANIFEST-000001", true},
	{"Default/IndexedDB/https_shop.example_0.indexeddb.leveldb/000003.log", true},
	{"Default/IndexedDB/https_shop.example_0.indexeddb.blob/1/00/5", true},
	{"Default/WebStorage/1/IndexedDB/indexeddb.leveldb/CURRENT", true},
	{"Default/WebStorage/1/CacheStorage/index.txt", true},
	{"Default/Storage/", true},
	{"Default/Storage/partition/data", true},
	{"Default/File System/000/t/00/00000000", true},
	{"Default/databases/Databases.db", true},
	{"Default/Service Worker/", true},
	{"Default/Service Worker/Database/MANIFEST-000001", true},
	{"Default/blob_storage/5f0e3c1a-0000-4000-8000-000000000000/", true},
	{"Default/shared_proto_db/metadata/000003.log", true},
	{"Default/Shared Dictionary/db", true},
	{"Default/Shared Dictionary/db-journal", true},
	{"Default/IndexedDB/lockfile/", true},

	// Configuration: extensions, their storage, flags, protected settings.
	{"Local State", false},
	{"Default/Secure Preferences", false},
	{"Default/Extensions/", false},
	{"Default/Extensions/aapocclcgogkmnckokdopfmhonfmgoek/", false},
	{"Default/Extensions/aapocclcgogkmnckokdopfmhonfmgoek/0.10_0/manifest.json", false},
	{"Default/Extension State/000003.log", false},
	{"Default/Extension Rules/", false},
	{"Default/Extension Rules/CURRENT", false},
	{"Default/Extension Scripts/000003.log", false},
	{"Default/Local Extension Settings/aapocclcgogkmnckokdopfmhonfmgoek/000003.log", false},
	{"Default/Sync Extension Settings/aapocclcgogkmnckokdopfmhonfmgoek/LOG", false},
	{"Default/Managed Extension Settings/aapocclcgogkmnckokdopfmhonfmgoek/LOG", false},
	{"Default/Extension Cookies", false},
	{"Default/Extension Cookies-journal", false},
	{"Default/Storage/ext/", false},
	{"Default/Storage/ext/aapocclcgogkmnckokdopfmhonfmgoek/def/Cookies", false},
	{"Default/Web Applications/Manifest Resources/x/Icons/128.png", false},

	// Other profiles, and files beside the profiles.
	{"Profile 1/", false},
	{"Profile 1/Preferences", false},
	{"Profile 1/Network/Cookies", false},
	{"Guest Profile/Preferences", false},
	{"System Profile/Local Storage/leveldb/000003.log", false},
	{"First Run", false},
	{"Last Version", false},
	{"SingletonLock", false},
	{"Defaults/Cookies", false},
	{"default/Cookies", false},

	// Caches and what the browser rebuilds.
	{"Default/Cache/", false},
	{"Default/Cache/Cache_Data/data_0", false},
	{"Default/Code Cache/js/index", false},
	{"Default/GPUCache/data_1", false},
	{"Default/Service Worker/CacheStorage/abc/index", false},
	{"Default/Service Worker/ScriptCache/index", false},
	{"Default/IndexedDB/Cache/x", false},
	{"Default/Network/Network Persistent State", false},
	{"Default/Network/Reporting and NEL", false},
	{"Default/Cookies-shm", false},
	{"Default/Bookmarks.bak", false},
	{"Default/Visited Links-journal", false},
	{"Default/IndexedDB/lockfile", false},

	// A file where a kept directory is, or a directory where a kept file is.
	{"Default", false},
	{"Default/Network", false},
	{"Default/Local Storage", false},
	{"Default/Storage/ext", false},
	{"Default/Preferences/", false},
	{"Default/Cookies/", false},
	{"", false},
	{"/", false},
}

func TestKept(t *testing.T) {
	for _, c := range keptCases {
		if got := Kept(c.name); got != c.kept {
			t.Errorf("Kept(%q) = %v, want %v", c.name, got, c.kept)
		}
	}
}

// TestKeptHoldsForParents: whatever is kept has its parent directories
// kept, so a walk that skips a directory that is not kept misses nothing.
func TestKeptHoldsForParents(t *testing.T) {
	names := []string{}
	for _, c := range keptCases {
		names = append(names, c.name)
	}
	for _, k := range allowlist {
		names = append(names, "Default/"+k.path, "Default/"+k.path+"/", "Default/"+k.path+"/x/y", "Default/"+k.path+"-journal")
	}
	for _, name := range names {
		if !Kept(name) {
			continue
		}
		trimmed := strings.TrimSuffix(name, "/")
		for i := strings.LastIndex(trimmed, "/"); i > 0; i = strings.LastIndex(trimmed, "/") {
			trimmed = trimmed[:i]
			if !Kept(trimmed + "/") {
				t.Errorf("%q is kept but its directory %q is not", name, trimmed+"/")
			}
		}
	}
}
