package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// archiveFiles is a user-data directory: file name to content.
type archiveFiles = map[string]string

// archiveA and archiveB are two states of one profile's directory; each has
// caches that the service drops.
var (
	archiveA = archiveFiles{
		"Default/Preferences":         `{"profile":{"name":"A"}}`,
		"Default/Local Storage/x.log": "local storage of A",
		"Default/Cookies":             "cookie database of A",
		"Default/Cache/data_0":        "cached bytes",
	}
	archiveB = archiveFiles{
		"Default/Preferences":          `{"profile":{"name":"B"}}`,
		"Default/IndexedDB/y.ldb":      "indexed db of B",
		"Default/Code Cache/js/index":  "compiled code",
		"Default/GPUCache/data_1":      "gpu cache",
		"Default/Service Worker/x.txt": "service worker state of B",
	}
)

// kept is what the service keeps of archiveA and archiveB: all but their
// caches (every other file of theirs is on the allowlist).
func kept(files archiveFiles) archiveFiles {
	out := archiveFiles{}
	for name, content := range files {
		if strings.Contains(name, "/Cache/") || strings.Contains(name, "/Code Cache/") || strings.Contains(name, "/GPUCache/") {
			continue
		}
		out[name] = content
	}
	return out
}

// testArchive packs files as a tar.gz, in name order.
func testArchive(t testing.TB, files archiveFiles) []byte { return testenv.TarGz(t, files) }

// unpack reads the regular files of a tar.gz.
func unpack(t *testing.T, archive []byte) archiveFiles { return testenv.Untar(t, archive) }

// archiveReq uploads archive as profile id's browser data.
func archiveReq(id string, archive []byte, headers []string) req {
	hs := pairs(headers)
	if _, ok := hs["Content-Type"]; !ok {
		hs["Content-Type"] = "application/gzip"
	}
	return req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/data", rawBody: archive, headers: hs}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// download fetches a profile's data and checks the ETag against the bytes.
func (h *harness) download(t *testing.T, id string, headers []string) (archiveFiles, string) {
	t.Helper()
	r := h.get("/api/v1/profiles/"+id+"/data", headers...)
	expect(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "application/gzip" {
		t.Fatalf("Content-Type %q, want application/gzip", ct)
	}
	etag := r.header.Get("ETag")
	if want := `"` + sha(r.raw) + `"`; etag != want {
		t.Fatalf("ETag %s, want the sha256 of the bytes %s", etag, want)
	}
	return unpack(t, r.raw), strings.Trim(etag, `"`)
}

var (
	cookiesA = []map[string]any{
		{"name": "sid", "value": "a-session", "domain": ".shop.example", "path": "/", "expires": 1900000000, "httpOnly": true, "secure": true, "sameSite": "Lax"},
		{"name": "pref", "value": "dark", "domain": "shop.example", "path": "/account", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Strict"},
	}
	cookiesB = []map[string]any{
		{"name": "sid", "value": "b-session", "domain": ".shop.example", "path": "/", "expires": 1900000500, "httpOnly": true, "secure": true, "sameSite": "None"},
	}
)

// cookieList decodes a cookie list answer into the shape of cookiesA.
func cookieList(t *testing.T, r response) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range asList(r.env["data"]) {
		m := c.(map[string]any)
		m["expires"] = int(m["expires"].(float64))
		out = append(out, m)
	}
	return out
}

func TestTimeMachineRestoresDataAndCookies(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)

		// No data yet: 404 and a null summary.
		expect(t, h.get("/api/v1/profiles/"+id+"/data", auth...), http.StatusNotFound)
		if d := h.get("/api/v1/profiles/"+id, auth...).data(); d["data"] != nil {
			t.Fatalf("new profile data = %v, want null", d["data"])
		}

		// Upload A and its cookies, then snapshot.
		put := h.do(archiveReq(id, testArchive(t, archiveA), auth))
		expect(t, put, http.StatusOK)
		files, shaA := h.download(t, id, auth)
		if !reflect.DeepEqual(files, kept(archiveA)) {
			t.Fatalf("downloaded A = %v, want %v", files, kept(archiveA))
		}
		if str(put.data()["sha256"]) != shaA || put.header.Get("ETag") != `"`+shaA+`"` {
			t.Fatalf("PUT answered %v (ETag %s), download has sha %s", put.data(), put.header.Get("ETag"), shaA)
		}
		prof := h.get("/api/v1/profiles/"+id, auth...).data()
		if got := prof["data"].(map[string]any); str(got["sha256"]) != shaA {
			t.Fatalf("profile data = %v, want sha %s", got, shaA)
		}
		expect(t, h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesA, headers: pairs(auth)}), http.StatusOK)
		snap := h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": "before B"}, auth...)
		expect(t, snap, http.StatusCreated)
		if d := snap.data()["data"].(map[string]any); str(d["sha256"]) != shaA {
			t.Fatalf("snapshot data = %v, want sha %s", d, shaA)
		}
		if snap.data()["kind"] != "manual" || snap.data()["label"] != "before B" {
			t.Fatalf("snapshot = %v", snap.data())
		}

		// Replace both with B.
		expect(t, h.do(archiveReq(id, testArchive(t, archiveB), auth)), http.StatusOK)
		expect(t, h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesB, headers: pairs(auth)}), http.StatusOK)
		filesB, shaB := h.download(t, id, auth)
		if !reflect.DeepEqual(filesB, kept(archiveB)) || shaB == shaA {
			t.Fatalf("downloaded B = %v (sha %s), want %v", filesB, shaB, kept(archiveB))
		}
		before := len(h.events(t, event.ProfileUpdated))

		// Restore: A's files and cookies come back exactly.
		r := h.post("/api/v1/time-machine/"+id+"/restore/"+str(snap.data()["id"]), nil, auth...)
		expect(t, r, http.StatusOK)
		if d := r.data()["data"].(map[string]any); str(d["sha256"]) != shaA {
			t.Fatalf("restored profile data = %v, want sha %s", d, shaA)
		}
		restored, shaNow := h.download(t, id, auth)
		if !reflect.DeepEqual(restored, kept(archiveA)) || shaNow != shaA {
			t.Fatalf("after restore: %v (sha %s), want %v (sha %s)", restored, shaNow, kept(archiveA), shaA)
		}
		if got := cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)); !reflect.DeepEqual(got, cookiesA) {
			t.Fatalf("cookies after restore = %v, want %v", got, cookiesA)
		}
		if n := len(h.events(t, event.ProfileUpdated)); n != before+1 {
			t.Fatalf("profile.updated events: %d after restore, want %d", n, before+1)
		}

		// The restore kept B as an automatic snapshot, newest first.
		list := h.get("/api/v1/time-machine/"+id+"/snapshots", auth...)
		expect(t, list, http.StatusOK)
		items := asList(list.env["data"])
		if len(items) != 2 {
			t.Fatalf("%d snapshots, want 2: %s", len(items), list.raw)
		}
		auto := items[0].(map[string]any)
		if auto["kind"] != "auto" || str(auto["data"].(map[string]any)["sha256"]) != shaB {
			t.Fatalf("newest snapshot = %v, want the automatic one of B (%s)", auto, shaB)
		}
		if items[1].(map[string]any)["id"] != snap.data()["id"] {
			t.Fatalf("second snapshot = %v, want %v", items[1], snap.data()["id"])
		}

		// Undo the restore: B again.
		expect(t, h.post("/api/v1/time-machine/"+id+"/restore/"+str(auto["id"]), nil, auth...), http.StatusOK)
		if files, _ := h.download(t, id, auth); !reflect.DeepEqual(files, kept(archiveB)) {
			t.Fatalf("after undo: %v, want %v", files, kept(archiveB))
		}
		if got := cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)); !reflect.DeepEqual(got, cookiesB) {
			t.Fatalf("cookies after undo = %v, want %v", got, cookiesB)
		}
	})
}

// rawArchive packs hand-made tar entries as a tar.gz.
func rawArchive(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, hdr := range hdrs {
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(hdr.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipBomb is a tar.gz of one file of zeros announced at size bytes: a few
// KiB on the wire.
func gzipBomb(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "Default/Local Storage/zeros", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zero)) {
		if _, err := tw.Write(zero[:min(int64(len(zero)), left)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// randomBytes are n bytes that do not compress.
func randomBytes(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnsafeArchivesLeaveTheDataIntact(t *testing.T) {
	t.Parallel()
	// Archives of at most 1 MiB, unpacking to at most 4 MiB.
	eachBackendEnv(t, map[string]string{"PROFILE_DATA_MAX": "1MiB"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), auth)), http.StatusOK)
		_, shaA := h.download(t, id, auth)
		version := h.get("/api/v1/profiles/"+id, auth...).data()["version"]

		file := func(name string) *tar.Header {
			return &tar.Header{Name: name, Mode: 0o644, Size: 3, Typeflag: tar.TypeReg}
		}
		cases := []struct {
			name    string
			archive []byte
			status  int
		}{
			{"traversal", rawArchive(t, file("Default/../../etc/passwd")), http.StatusUnprocessableEntity},
			{"absolute path", rawArchive(t, file("/etc/passwd")), http.StatusUnprocessableEntity},
			{"symlink", rawArchive(t, &tar.Header{Name: "Default/link", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink, Mode: 0o777}), http.StatusUnprocessableEntity},
			{"hard link", rawArchive(t, file("Default/a"), &tar.Header{Name: "Default/b", Linkname: "Default/a", Typeflag: tar.TypeLink, Mode: 0o644}), http.StatusUnprocessableEntity},
			{"device", rawArchive(t, &tar.Header{Name: "Default/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}), http.StatusUnprocessableEntity},
			{"fifo", rawArchive(t, &tar.Header{Name: "Default/pipe", Typeflag: tar.TypeFifo, Mode: 0o666}), http.StatusUnprocessableEntity},
			{"not gzip", []byte("PK\x03\x04 this is a zip"), http.StatusUnprocessableEntity},
			{"archive cut short", testArchive(t, archiveB)[:40], http.StatusUnprocessableEntity},
			// 64 MiB of zeros: some 64 KiB on the wire, far past what an
			// archive may unpack to.
			{"gzip bomb", gzipBomb(t, 64<<20), http.StatusRequestEntityTooLarge},
			{"over PROFILE_DATA_MAX as sent", testArchive(t, archiveFiles{"Default/Local Storage/big": randomBytes(t, 1<<20+1)}), http.StatusRequestEntityTooLarge},
		}
		for _, c := range cases {
			r := h.do(archiveReq(id, c.archive, auth))
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, truncate(r.raw))
			}
			files, sum := h.download(t, id, auth)
			if sum != shaA || !reflect.DeepEqual(files, kept(archiveA)) {
				t.Fatalf("%s: data changed to %s (%v)", c.name, sum, files)
			}
		}
		if v := h.get("/api/v1/profiles/"+id, auth...).data()["version"]; v != version {
			t.Fatalf("version %v after refused uploads, want %v", v, version)
		}
		// Another content type is 415.
		r := h.do(archiveReq(id, testArchive(t, archiveB), append(auth, "Content-Type", "application/json")))
		expect(t, r, http.StatusUnsupportedMediaType)
	})
}

// extensionID names the extension of extensionArchive.
const extensionID = "aapocclcgogkmnckokdopfmhonfmgoek"

// extensionArchive is a profile an extension took over: the extension and
// its storage, its settings in Preferences and Secure Preferences, the
// proxy set to direct, a chrome://flags experiment in Local State and a
// second profile; beside them, the cookies and local storage that are the
// profile's data.
var extensionArchive = archiveFiles{
	"Local State":                              `{"browser":{"enabled_labs_experiments":["enable-quic@2"]},"profile":{"last_used":"Profile 1"}}`,
	"Default/Network/Cookies":                  "cookie database",
	"Default/Local Storage/leveldb/000003.log": "local storage",
	"Default/Preferences": `{"extensions":{"settings":{"` + extensionID + `":{"path":"` + extensionID + `/1.0_0","location":4,"active_permissions":{"api":["proxy"]}}}},` +
		`"proxy":{"mode":"direct"},"download":{"default_directory":"/etc"},"profile":{"name":"Shop"}}`,
	"Default/Secure Preferences":                                      `{"extensions":{"settings":{"` + extensionID + `":{}}}}`,
	"Default/Extensions/" + extensionID + "/1.0_0/manifest.json":      `{"manifest_version":3,"permissions":["proxy","<all_urls>"],"background":{"service_worker":"bg.js"}}`,
	"Default/Extensions/" + extensionID + "/1.0_0/bg.js":              `chrome.proxy.settings.set({value:{mode:"direct"}})`,
	"Default/Local Extension Settings/" + extensionID + "/000003.log": "extension storage",
	"Default/Extension State/000003.log":                              "extension state",
	"Default/Storage/ext/" + extensionID + "/def/Cookies":             "extension cookies",
	"Profile 1/Preferences":                                           `{"proxy":{"mode":"direct"}}`,
}

func TestDataUploadKeepsNoExtensionNorConfiguration(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		put := h.do(archiveReq(id, testArchive(t, extensionArchive), auth))
		expect(t, put, http.StatusOK)
		files, sum := h.download(t, id, auth)
		want := archiveFiles{
			"Default/Network/Cookies":                  "cookie database",
			"Default/Local Storage/leveldb/000003.log": "local storage",
			"Default/Preferences":                      `{"profile":{"name":"Shop"}}`,
		}
		if !reflect.DeepEqual(files, want) {
			t.Fatalf("stored %q, want %q", files, want)
		}
		if str(put.data()["sha256"]) != sum {
			t.Fatalf("PUT answered sha256 %v, the download has %s", put.data()["sha256"], sum)
		}
		// Stored data are a fixed point: uploading them again changes nothing.
		again := h.get("/api/v1/profiles/"+id+"/data", auth...)
		expect(t, again, http.StatusOK)
		if r := h.do(archiveReq(id, again.raw, auth)); r.status != http.StatusOK || str(r.data()["sha256"]) != sum {
			t.Fatalf("uploading the stored data again: %d %s, want 200 with sha256 %s", r.status, truncate(r.raw), sum)
		}
	})
}

// dataIssue is the issue a 422 names for field "data", or "".
func dataIssue(r response) string {
	e, _ := r.env["error"].(map[string]any)
	for _, d := range asList(e["details"]) {
		if m, _ := d.(map[string]any); m["field"] == "data" {
			return str(m["issue"])
		}
	}
	return ""
}

// manyEntries streams a tar.gz of n empty files under Default/IndexedDB,
// where any number of files would be kept, made only as it is sent: the
// service reads a tenth of it. It is stored, not compressed (the 1.2 MB
// of such an archive compressed are 100 MB of tar), and its tar headers
// are made from one template: compressing, or formatting with
// archive/tar, 199,000 entries takes tens of seconds under the race
// detector.
func manyEntries(t *testing.T, n int) io.ReadCloser {
	t.Helper()
	// A ustar header of an empty regular file, mode 0600, its name and
	// checksum left to fill in.
	var template [512]byte
	copy(template[100:], "0000600\x00")
	copy(template[108:], "0000000\x00")
	copy(template[116:], "0000000\x00")
	copy(template[124:], "00000000000\x00")
	copy(template[136:], "00000000000\x00")
	copy(template[148:156], "        ") // the checksum counts itself as spaces
	template[156] = tar.TypeReg
	copy(template[257:], "ustar\x0000")
	base := 0
	for _, b := range template {
		base += int(b)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		zw, _ := gzip.NewWriterLevel(pw, gzip.NoCompression)
		for i := range n {
			block := template
			name := "Default/IndexedDB/" + strconv.Itoa(i)
			copy(block[:100], name)
			sum := base
			for j := range len(name) {
				sum += int(name[j])
			}
			copy(block[148:156], fmt.Sprintf("%06o\x00 ", sum))
			if _, err := zw.Write(block[:]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		// Two zero blocks end a tar.
		if _, err := zw.Write(make([]byte, 1024)); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(zw.Close())
	}()
	t.Cleanup(func() {
		_ = pr.CloseWithError(errors.New("the upload is over"))
		<-done
	})
	return pr
}

// putStream uploads body, of unknown length, as profile id's data.
func (h *harness) putStream(t *testing.T, id string, body io.Reader, auth []string) response {
	t.Helper()
	hr, err := http.NewRequest(http.MethodPut, h.base+"/api/v1/profiles/"+id+"/data", body)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/gzip")
	for k, v := range pairs(auth) {
		hr.Header.Set(k, v)
	}
	resp, err := h.client.Do(hr)
	if err != nil {
		t.Fatalf("PUT data: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &out.env); err != nil {
		t.Fatalf("PUT data answered %d, not JSON: %s", resp.StatusCode, truncate(raw))
	}
	return out
}

// TestDataUploadRefusesArchivesNoLaunchCouldUnpack: names no filesystem
// holds, a file and a directory of one name, a name twice, Preferences
// over their bound and more entries than a profile has are 422 naming the
// cause, and the data stay as they were.
func TestDataUploadRefusesArchivesNoLaunchCouldUnpack(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), auth)), http.StatusOK)
		_, shaA := h.download(t, id, auth)

		file := func(name string) *tar.Header {
			return &tar.Header{Name: name, Mode: 0o644, Size: 3, Typeflag: tar.TypeReg}
		}
		long := "Default/Local Storage/" + strings.Repeat("a", 256)
		cases := []struct {
			name    string
			archive []byte
			issue   string
		}{
			{"a file and a directory of one name", rawArchive(t, file("Default/x"), file("Default/x/y")),
				`entry "Default/x/y": "Default/x" is a file in the archive and cannot hold it`},
			{"a directory and a file of one name", rawArchive(t, file("Default/IndexedDB/x/y"), file("Default/IndexedDB/x")),
				`entry "Default/IndexedDB/x" is both a file and a directory in the archive`},
			{"a name twice", rawArchive(t, file("Default/Cookies"), file("./Default/Cookies")),
				`entry "Default/Cookies" appears twice in the archive`},
			{"a component of 256 bytes", rawArchive(t, file(long)),
				`entry "` + long + `": a component of the name is 256 bytes long, more than the 255 a file name may have`},
			{"Preferences over 4 MiB", testArchive(t, archiveFiles{"Default/Preferences": `{"a":"` + strings.Repeat("x", 4<<20) + `"}`}),
				`entry "Default/Preferences": larger than 4194304 bytes`},
		}
		for _, c := range cases {
			r := h.do(archiveReq(id, c.archive, auth))
			if r.status != http.StatusUnprocessableEntity || dataIssue(r) != c.issue {
				t.Errorf("%s: %d %s; want 422 with data: %s", c.name, r.status, truncate(r.raw), c.issue)
			}
		}

		// 199,000 empty files, which took every launch half a minute:
		// refused at the 20,001st.
		r := h.putStream(t, id, manyEntries(t, 199_000), auth)
		want := "the archive has more than 20000 entries; a profile's data have far fewer (leave caches out)"
		if r.status != http.StatusUnprocessableEntity || dataIssue(r) != want {
			t.Errorf("199,000 entries: %d %s; want 422 with data: %s", r.status, truncate(r.raw), want)
		}

		if files, sum := h.download(t, id, auth); sum != shaA || !reflect.DeepEqual(files, kept(archiveA)) {
			t.Fatalf("data changed to %s (%v)", sum, files)
		}
	})
}

func TestDataPreconditionsAndRunningProfiles(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)

		// If-Match on a profile without data: only a mismatch.
		r := h.do(archiveReq(id, testArchive(t, archiveA), append(auth, "If-Match", `"`+strings.Repeat("0", 64)+`"`)))
		expect(t, r, http.StatusPreconditionFailed)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), append(auth, "If-Match", "*"))), http.StatusPreconditionFailed)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), append(auth, "If-Match", "not-a-hash"))), http.StatusBadRequest)
		put := h.do(archiveReq(id, testArchive(t, archiveA), auth))
		expect(t, put, http.StatusOK)
		etag := put.header.Get("ETag")

		// The right ETag replaces; the old one then no longer matches.
		expect(t, h.do(archiveReq(id, testArchive(t, archiveB), append(auth, "If-Match", etag))), http.StatusOK)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), append(auth, "If-Match", etag))), http.StatusPreconditionFailed)
		files, _ := h.download(t, id, auth)
		if !reflect.DeepEqual(files, kept(archiveB)) {
			t.Fatalf("data = %v, want B", files)
		}
		// If-None-Match with the current ETag: 304.
		_, cur := h.download(t, id, auth)
		expect(t, h.get("/api/v1/profiles/"+id+"/data", append(auth, "If-None-Match", `"`+cur+`"`)...), http.StatusNotModified)

		// Running: data, cookies and restore are refused naming the
		// holder; a snapshot is taken.
		snap := h.post("/api/v1/time-machine/"+id+"/snapshots", nil, auth...)
		expect(t, snap, http.StatusCreated)
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		for _, r := range []response{
			h.do(archiveReq(id, testArchive(t, archiveA), auth)),
			h.delete("/api/v1/profiles/"+id+"/data", auth...),
			h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesA, headers: pairs(auth)}),
			h.post("/api/v1/time-machine/"+id+"/restore/"+str(snap.data()["id"]), nil, auth...),
		} {
			expect(t, r, http.StatusConflict)
			if !strings.Contains(string(r.raw), a.email) {
				t.Errorf("conflict does not name the holder: %s", r.raw)
			}
		}
		expect(t, h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": "while running"}, auth...), http.StatusCreated)
		expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)

		// Deleting the data removes archive and cookies; again is 204.
		expect(t, h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesA, headers: pairs(auth)}), http.StatusOK)
		expect(t, h.delete("/api/v1/profiles/"+id+"/data", auth...), http.StatusNoContent)
		expect(t, h.delete("/api/v1/profiles/"+id+"/data", auth...), http.StatusNoContent)
		expect(t, h.get("/api/v1/profiles/"+id+"/data", auth...), http.StatusNotFound)
		if got := asList(h.get("/api/v1/profiles/"+id+"/cookies", auth...).env["data"]); len(got) != 0 {
			t.Fatalf("cookies after delete = %v", got)
		}
		if d := h.get("/api/v1/profiles/"+id, auth...).data(); d["data"] != nil {
			t.Fatalf("profile data after delete = %v", d["data"])
		}
	})
}

func TestCookiesAreCheckedAndSpeakCookiesTxt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		path := "/api/v1/profiles/" + id + "/cookies"

		// A bad cookie is 422 naming its index.
		bad := []map[string]any{cookiesA[0], {"name": "x", "value": "1", "domain": "bad domain", "path": "/"}}
		r := h.do(req{method: http.MethodPut, path: path, body: bad, headers: pairs(auth)})
		expect(t, r, http.StatusUnprocessableEntity)
		if f := r.errFields(); len(f) == 0 || !strings.HasPrefix(f[0], "cookies[1]") {
			t.Fatalf("fields %v, want cookies[1]...", f)
		}
		noSecure := []map[string]any{{"name": "x", "value": "1", "domain": "a.example", "sameSite": "None"}}
		expect(t, h.do(req{method: http.MethodPut, path: path, body: noSecure, headers: pairs(auth)}), http.StatusUnprocessableEntity)

		// Defaults: path /, sameSite Lax, expires -1.
		r = h.do(req{method: http.MethodPut, path: path, body: []map[string]any{{"name": "k", "value": "v", "domain": "A.Example"}}, headers: pairs(auth)})
		expect(t, r, http.StatusOK)
		want := []map[string]any{{"name": "k", "value": "v", "domain": "a.example", "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}}
		if got := cookieList(t, r); !reflect.DeepEqual(got, want) {
			t.Fatalf("stored %v, want %v", got, want)
		}

		// cookies.txt in, JSON and cookies.txt out.
		txt := "# Netscape HTTP Cookie File\r\n" +
			"#HttpOnly_.shop.example\tTRUE\t/\tTRUE\t1900000000\tsid\ta-session\r\n" +
			"shop.example\tFALSE\t/account\tFALSE\t0\tpref\tdark\r\n"
		r = h.do(req{method: http.MethodPut, path: path, rawBody: []byte(txt), headers: pairs(append(auth, "Content-Type", "text/plain"))})
		expect(t, r, http.StatusOK)
		want = []map[string]any{
			{"name": "sid", "value": "a-session", "domain": ".shop.example", "path": "/", "expires": 1900000000, "httpOnly": true, "secure": true, "sameSite": "Lax"},
			{"name": "pref", "value": "dark", "domain": "shop.example", "path": "/account", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"},
		}
		if got := cookieList(t, h.get(path, auth...)); !reflect.DeepEqual(got, want) {
			t.Fatalf("cookies from cookies.txt = %v, want %v", got, want)
		}
		out := h.get(path, append(auth, "Accept", "text/plain")...)
		expect(t, out, http.StatusOK)
		for _, line := range []string{
			"#HttpOnly_.shop.example\tTRUE\t/\tTRUE\t1900000000\tsid\ta-session",
			"shop.example\tFALSE\t/account\tFALSE\t0\tpref\tdark",
		} {
			if !strings.Contains(string(out.raw), line) {
				t.Fatalf("cookies.txt lacks %q:\n%s", line, out.raw)
			}
		}
		r = h.do(req{method: http.MethodPut, path: path, rawBody: []byte("shop.example\tMAYBE\t/\n"), headers: pairs(append(auth, "Content-Type", "text/plain"))})
		expect(t, r, http.StatusUnprocessableEntity)
		if f := r.errFields(); len(f) == 0 || f[0] != "line 1" {
			t.Fatalf("fields %v, want line 1", f)
		}
		// An empty list removes them.
		expect(t, h.do(req{method: http.MethodPut, path: path, body: []any{}, headers: pairs(auth)}), http.StatusOK)
		if got := asList(h.get(path, auth...).env["data"]); len(got) != 0 {
			t.Fatalf("cookies after emptying = %v", got)
		}
	})
}

// blobBytes is what the service's blob store holds: the files under
// DATA_DIR/blobs, or the chunks of the blob tables on PostgreSQL.
func (h *harness) blobBytes(t *testing.T, dataDir string) int64 {
	t.Helper()
	if s, ok := h.store.(*bunstore.Store); ok && s.Dialect() == bunstore.DialectPostgres {
		var n int64
		if err := s.DB().NewRaw("SELECT coalesce(sum(octet_length(data)), 0) FROM blob_chunks").Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var n int64
	err := filepath.WalkDir(filepath.Join(dataDir, "blobs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// collect runs the blob collector once the grace period has passed.
func (h *harness) collect(t *testing.T, blobs *browserdata.Blobs) {
	t.Helper()
	h.clock.Advance(browserdata.BlobGrace + time.Second)
	if _, err := blobs.Collect(context.Background()); err != nil {
		t.Fatalf("Collect: %v", err)
	}
}

func TestSnapshotsShareContentAndDeletingFreesIt(t *testing.T) {
	t.Parallel()
	const size = 10 << 20
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			dataDir := t.TempDir()
			var blobs *browserdata.Blobs
			h := start(t, options{databaseURL: b.url(t), env: map[string]string{"DATA_DIR": dataDir, "SNAPSHOTS_PER_PROFILE": "100"}, extra: []fx.Option{fx.Populate(&blobs)}})
			a := h.register(t)
			auth := bearer(a.access)
			id := h.createProfile(t, a, nil)
			base := h.blobBytes(t, dataDir)
			expect(t, h.do(archiveReq(id, testArchive(t, archiveFiles{"Default/Local Storage/big": randomBytes(t, size)}), auth)), http.StatusOK)
			one := h.blobBytes(t, dataDir) - base
			if one < size || one > size+size/50 {
				t.Fatalf("one 10 MiB archive takes %d bytes", one)
			}
			for i := range 100 {
				expect(t, h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": fmt.Sprint(i)}, auth...), http.StatusCreated)
			}
			all := h.blobBytes(t, dataDir) - base
			t.Logf("%s: one archive %d bytes; with 100 snapshots %d bytes", b.name, one, all)
			if all != one {
				t.Fatalf("100 snapshots of unchanged data take %d bytes, want %d (one copy)", all, one)
			}
			// Retention: a 101st snapshot prunes the oldest.
			expect(t, h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": "100"}, auth...), http.StatusCreated)
			var labels []string
			for cursor := ""; ; {
				r := h.get("/api/v1/time-machine/"+id+"/snapshots?limit=100&cursor="+cursor, auth...)
				expect(t, r, http.StatusOK)
				for _, it := range asList(r.env["data"]) {
					labels = append(labels, str(it.(map[string]any)["label"]))
				}
				meta := r.env["meta"].(map[string]any)
				if meta["nextCursor"] == nil {
					break
				}
				cursor = str(meta["nextCursor"])
			}
			if len(labels) != 100 || labels[0] != "100" || labels[99] != "1" {
				t.Fatalf("%d snapshots, newest %q, oldest %q; want 100 from \"100\" down to \"1\"", len(labels), labels[0], labels[len(labels)-1])
			}

			// Deleting the profile deletes its snapshots and frees the data.
			expect(t, h.delete("/api/v1/profiles/"+id, auth...), http.StatusNoContent)
			h.collect(t, blobs)
			if left := h.blobBytes(t, dataDir) - base; left != 0 {
				t.Fatalf("%d bytes of blobs left after deleting the profile", left)
			}
		})
	}
}

func TestReplacedDataIsCollectedOnlyWhenUnreferenced(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			dataDir := t.TempDir()
			var blobs *browserdata.Blobs
			h := start(t, options{databaseURL: b.url(t), env: map[string]string{"DATA_DIR": dataDir}, extra: []fx.Option{fx.Populate(&blobs)}})
			a := h.register(t)
			auth := bearer(a.access)
			id := h.createProfile(t, a, nil)
			base := h.blobBytes(t, dataDir)
			bigA := archiveFiles{"Default/Local Storage/a": randomBytes(t, 1<<20)}
			bigB := archiveFiles{"Default/Local Storage/b": randomBytes(t, 1<<20)}
			expect(t, h.do(archiveReq(id, testArchive(t, bigA), auth)), http.StatusOK)
			snap := h.post("/api/v1/time-machine/"+id+"/snapshots", nil, auth...)
			expect(t, snap, http.StatusCreated)
			expect(t, h.do(archiveReq(id, testArchive(t, bigB), auth)), http.StatusOK)
			h.collect(t, blobs)
			both := h.blobBytes(t, dataDir) - base
			if both < 2<<20 {
				t.Fatalf("A, kept by a snapshot, was collected: %d bytes left", both)
			}
			// An admin deletes the snapshot: A is no longer referred to.
			expect(t, h.delete("/api/v1/time-machine/"+id+"/snapshots/"+str(snap.data()["id"]), auth...), http.StatusNoContent)
			h.collect(t, blobs)
			onlyB := h.blobBytes(t, dataDir) - base
			if onlyB >= both || onlyB < 1<<20 {
				t.Fatalf("after deleting the snapshot: %d bytes, before %d; want B alone", onlyB, both)
			}
			if files, _ := h.download(t, id, auth); !reflect.DeepEqual(files, bigB) {
				t.Fatal("B changed")
			}
		})
	}
}
