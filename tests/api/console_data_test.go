package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/profilesvc/profilesvc/domain/team"
)

// upload posts a file as the console's multipart forms send it: the file in
// field, with the Origin and Sec-Fetch-Site of the console's own pages
// unless headers forge others.
func (u *consoleUser) upload(path, field, filename string, content []byte, headers ...string) consolePage {
	u.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		u.t.Fatal(err)
	}
	if _, err := fw.Write(content); err != nil {
		u.t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		u.t.Fatal(err)
	}
	return u.send(http.MethodPost, path, mw.FormDataContentType(), &body, headers...)
}

// dataState is what the API shows of a profile's data, settings and
// snapshots: what a refused request must leave as it was.
type dataState struct {
	version   any
	data      any
	name      string
	cookies   string
	snapshots int
}

func (h *harness) dataState(t *testing.T, a account, id string) dataState {
	t.Helper()
	auth := bearer(a.access)
	p := h.get("/api/v1/profiles/"+id, auth...)
	expect(t, p, http.StatusOK)
	cs := h.get("/api/v1/profiles/"+id+"/cookies", auth...)
	expect(t, cs, http.StatusOK)
	list := h.get("/api/v1/time-machine/"+id+"/snapshots?limit=100", auth...)
	expect(t, list, http.StatusOK)
	return dataState{
		version: p.data()["version"], data: p.data()["data"], name: str(p.data()["name"]),
		cookies: string(cs.raw), snapshots: len(asList(list.env["data"])),
	}
}

// apiSHA is the sha256 of the profile's data as the API reports it.
func apiSHA(t *testing.T, h *harness, a account, id string) string {
	t.Helper()
	d, _ := h.get("/api/v1/profiles/"+id, bearer(a.access)...).data()["data"].(map[string]any)
	return str(d["sha256"])
}

// cookiesJSON is a cookie file as the console's import reads it.
func cookiesJSON(t *testing.T, cs []map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConsoleDataUploadDownloadAndCookies(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, map[string]any{"name": "Data owner"})
		u := h.console(t)
		u.signin(a)
		base := "/app/profiles/" + id

		first := u.get(base + "/data")
		if first.status != http.StatusOK || !strings.Contains(text(first), "No browser data saved yet") {
			t.Fatalf("the data page before any upload: %d %s", first.status, text(first))
		}
		for _, want := range []string{"POST " + base + "/data", "POST " + base + "/cookies"} {
			if !slices.Contains(actions(first), want) {
				t.Errorf("the owner's data page offers %v, not %s", actions(first), want)
			}
		}
		var multipartForms int
		walk(first.doc, func(n *html.Node) {
			if n.Data == "form" && attr(n, "enctype") == "multipart/form-data" {
				multipartForms++
			}
		})
		if multipartForms != 2 {
			t.Errorf("%d multipart forms on the data page, want 2 (archive and cookies)", multipartForms)
		}

		// Upload through the console; the API reports what was stored.
		up := u.upload(base+"/data", "archive", "profile.tar.gz", testArchive(t, archiveA))
		stored := u.follow(up)
		if !strings.Contains(text(stored), "Browser data stored") {
			t.Fatalf("after the upload: %s", text(stored))
		}
		apiData := h.get("/api/v1/profiles/"+id, auth...).data()["data"].(map[string]any)
		sum, size := str(apiData["sha256"]), int(apiData["sizeBytes"].(float64))
		if len(sum) != 64 || !strings.Contains(text(stored), sum[:12]) {
			t.Errorf("the data page does not show the sha256 %q the API reports: %s", sum, text(stored))
		}
		if !slices.Contains(actions(stored), "GET "+base+"/data/archive") {
			t.Errorf("the data page offers no download: %v", actions(stored))
		}

		// The download is the API's archive, as an attachment.
		dl := u.get(base + "/data/archive")
		if dl.status != http.StatusOK || dl.header.Get("Content-Type") != "application/gzip" ||
			!strings.HasPrefix(dl.header.Get("Content-Disposition"), "attachment;") {
			t.Fatalf("download: %d, Content-Type %q, Content-Disposition %q", dl.status, dl.header.Get("Content-Type"), dl.header.Get("Content-Disposition"))
		}
		if sha([]byte(dl.body)) != sum || len(dl.body) != size {
			t.Errorf("the download has sha %s and %d bytes, the API reports %s and %d", sha([]byte(dl.body)), len(dl.body), sum, size)
		}
		if api := h.get("/api/v1/profiles/"+id+"/data", auth...); !bytes.Equal(api.raw, []byte(dl.body)) {
			t.Error("the console's download differs from the API's")
		}
		if files := unpack(t, []byte(dl.body)); !reflect.DeepEqual(files, kept(archiveA)) {
			t.Errorf("the downloaded archive holds %v, want %v", files, kept(archiveA))
		}

		// The cookie export is the API's cookie list, as an attachment.
		expect(t, h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesA, headers: pairs(auth)}), http.StatusOK)
		export := u.get(base + "/cookies.json")
		if export.status != http.StatusOK || export.header.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(export.header.Get("Content-Disposition"), "attachment;") {
			t.Fatalf("cookie export: %d, Content-Type %q, Content-Disposition %q", export.status, export.header.Get("Content-Type"), export.header.Get("Content-Disposition"))
		}
		var exported []map[string]any
		if err := json.Unmarshal([]byte(export.body), &exported); err != nil {
			t.Fatalf("the cookie export is not a JSON list: %v: %s", err, export.body)
		}
		for _, c := range exported {
			c["expires"] = int(c["expires"].(float64))
		}
		if api := cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)); !reflect.DeepEqual(exported, api) || !reflect.DeepEqual(exported, cookiesA) {
			t.Errorf("the export is %v, the API answers %v (set %v)", exported, api, cookiesA)
		}

		// A cookie file goes in through the form; a bad one is refused in
		// words and changes nothing.
		imported := u.follow(u.upload(base+"/cookies", "cookies", "cookies.json", cookiesJSON(t, cookiesB)))
		if !strings.Contains(text(imported), "1 cookie stored") {
			t.Errorf("after the cookie import: %s", text(imported))
		}
		if got := cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)); !reflect.DeepEqual(got, cookiesB) {
			t.Errorf("the API's cookies after the import: %v, want %v", got, cookiesB)
		}
		for name, file := range map[string][]byte{
			"a bad domain":   cookiesJSON(t, []map[string]any{{"name": "x", "value": "1", "domain": "bad domain", "path": "/"}}),
			"an extra field": []byte(`[{"name":"x","value":"1","domain":"a.example","path":"/","extra":true}]`),
			"not JSON":       []byte(`[{"name":`),
			"an empty file":  {},
		} {
			p := u.upload(base+"/cookies", "cookies", "cookies.json", file)
			if p.status != http.StatusUnprocessableEntity || !strings.Contains(text(p), "Please check the form") || strings.Contains(p.body, `"error"`) {
				t.Errorf("%s: %d %s", name, p.status, text(p))
			}
		}
		if got := cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)); !reflect.DeepEqual(got, cookiesB) {
			t.Errorf("refused cookie files changed the cookies to %v", got)
		}

		// Deleting the data asks first, then removes data and cookies.
		if p := u.get(base + "/data/delete"); p.status != http.StatusOK || !slices.Contains(actions(p), "POST "+base+"/data/delete") {
			t.Fatalf("the delete confirmation: %d %v", p.status, actions(p))
		}
		gone := u.follow(u.post(base+"/data/delete", url.Values{}))
		if !strings.Contains(text(gone), "Browser data and cookies deleted") || !strings.Contains(text(gone), "No browser data saved yet") {
			t.Errorf("after deleting: %s", text(gone))
		}
		expect(t, h.get("/api/v1/profiles/"+id+"/data", auth...), http.StatusNotFound)
		if d := h.get("/api/v1/profiles/"+id, auth...).data(); d["data"] != nil {
			t.Errorf("the API still reports data: %v", d["data"])
		}
		if p := u.get(base + "/data/archive"); p.status != http.StatusNotFound || !strings.Contains(text(p), "not found") {
			t.Errorf("downloading deleted data: %d %s", p.status, text(p))
		}
	})
}

func TestConsoleDataRefusesHostileUploads(t *testing.T) {
	t.Parallel()
	// Archives of at most 1 MiB, unpacking to at most 4 MiB.
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"PROFILE_DATA_MAX": "1MiB"}})
	a := h.register(t)
	auth := bearer(a.access)
	id := h.createProfile(t, a, map[string]any{"name": "Target"})
	expect(t, h.do(archiveReq(id, testArchive(t, archiveA), auth)), http.StatusOK)
	before := h.dataState(t, a, id)
	u := h.console(t)
	u.signin(a)

	file := func(name string) *tar.Header {
		return &tar.Header{Name: name, Mode: 0o644, Size: 3, Typeflag: tar.TypeReg}
	}
	for _, c := range []struct {
		name    string
		archive []byte
		status  int
		says    string
	}{
		{"a path that climbs out", rawArchive(t, file("../x")), http.StatusUnprocessableEntity, "../x"},
		{"a traversal inside", rawArchive(t, file("Default/../../etc/passwd")), http.StatusUnprocessableEntity, "Please check the form"},
		{"a symlink", rawArchive(t, &tar.Header{Name: "Default/link", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink, Mode: 0o777}), http.StatusUnprocessableEntity, "Please check the form"},
		{"not gzip", []byte("PK\x03\x04 this is a zip"), http.StatusUnprocessableEntity, "not a tar.gz"},
		{"cut short", testArchive(t, archiveB)[:40], http.StatusUnprocessableEntity, "Please check the form"},
		{"an empty file", nil, http.StatusUnprocessableEntity, "choose a file"},
		{"a gzip bomb", gzipBomb(t, 8<<20), http.StatusRequestEntityTooLarge, "nothing was stored"},
		{"over PROFILE_DATA_MAX", testArchive(t, archiveFiles{"Default/Local Storage/big": randomBytes(t, 1<<20+1)}), http.StatusRequestEntityTooLarge, "at most 1.0 MiB"},
	} {
		p := u.upload("/app/profiles/"+id+"/data", "archive", "x.tar.gz", c.archive)
		if p.status != c.status || !strings.Contains(text(p), c.says) {
			t.Errorf("%s: %d, want %d saying %q: %s", c.name, p.status, c.status, c.says, text(p))
		}
		if strings.Contains(p.body, `"error"`) || strings.Contains(p.body, "goroutine") {
			t.Errorf("%s: the refusal shows an envelope or a stack: %s", c.name, p.body)
		}
		if got := h.dataState(t, a, id); !reflect.DeepEqual(got, before) {
			t.Fatalf("%s changed the profile: %+v, was %+v", c.name, got, before)
		}
	}
	// A body that is not a multipart form is refused too.
	if p := u.post("/app/profiles/"+id+"/data", url.Values{"archive": {"not a file"}}); p.status != http.StatusBadRequest || !strings.Contains(text(p), "multipart/form-data") {
		t.Errorf("an urlencoded upload: %d %s", p.status, text(p))
	}
	if files, sum := h.download(t, id, auth); sum != str(before.data.(map[string]any)["sha256"]) || !reflect.DeepEqual(files, kept(archiveA)) {
		t.Errorf("the stored archive changed: %s %v", sum, files)
	}
}

// restoreRows reads the restore page's table of changes: field to its
// value now and after the restore.
func restoreRows(p consolePage) map[string][2]string {
	out := map[string][2]string{}
	walk(p.doc, func(n *html.Node) {
		if n.Data != "tr" {
			return
		}
		var cells []string
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.Data == "th" || c.Data == "td") {
				cells = append(cells, strings.TrimSpace(text(consolePage{doc: c})))
			}
		}
		if len(cells) == 3 && cells[0] != "Field" {
			out[cells[0]] = [2]string{cells[1], cells[2]}
		}
	})
	return out
}

func TestConsoleDataSnapshotRestoreShowsWhatChanges(t *testing.T) {
	t.Parallel()
	// A prober that reaches no network, for the profile's proxy.
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, map[string]any{
			"name": "Before name", "tags": []string{"old"}, "notes": "old notes",
			"fingerprint": map[string]any{"locale": "en-US", "timezone": "America/New_York"},
			"proxy":       map[string]any{"type": "socks5", "host": "proxy.example.com", "port": 1080},
		})
		expect(t, h.do(archiveReq(id, testArchive(t, archiveA), auth)), http.StatusOK)
		shaA := apiSHA(t, h, a, id)
		u := h.console(t)
		u.signin(a)
		base := "/app/profiles/" + id

		empty := u.get(base + "/snapshots")
		if empty.status != http.StatusOK || !strings.Contains(text(empty), "No snapshots yet") || !slices.Contains(actions(empty), "POST "+base+"/snapshots") {
			t.Fatalf("the time machine before any snapshot: %d %v %s", empty.status, actions(empty), text(empty))
		}
		if p := u.post(base+"/snapshots", url.Values{"label": {"bad\u202elabel"}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(text(p), "label") {
			t.Errorf("a label with a bidirectional control: %d %s", p.status, text(p))
		}
		list := u.follow(u.post(base+"/snapshots", url.Values{"label": {"before the change"}}))
		if !strings.Contains(text(list), `Snapshot "before the change" taken`) || !strings.Contains(text(list), "manual") {
			t.Fatalf("after taking a snapshot: %s", text(list))
		}
		snaps := asList(h.get("/api/v1/time-machine/"+id+"/snapshots", auth...).env["data"])
		if len(snaps) != 1 || str(snaps[0].(map[string]any)["label"]) != "before the change" || str(snaps[0].(map[string]any)["kind"]) != "manual" {
			t.Fatalf("the API's snapshots: %v", snaps)
		}
		sid := str(snaps[0].(map[string]any)["id"])

		// Change the profile through the API.
		version := h.get("/api/v1/profiles/"+id, auth...).data()["version"].(float64)
		r := h.patch("/api/v1/profiles/"+id, map[string]any{
			"name": "After name", "tags": []string{"new", "shop"}, "notes": "new notes",
			"fingerprint": map[string]any{"locale": "de-DE", "timezone": "Europe/Berlin"}, "proxy": nil,
		}, append(auth, "If-Match", `"`+strconv.Itoa(int(version))+`"`)...)
		expect(t, r, http.StatusOK)
		expect(t, h.do(archiveReq(id, testArchive(t, archiveB), auth)), http.StatusOK)
		shaB := apiSHA(t, h, a, id)

		confirm := u.get(base + "/snapshots/" + sid + "/restore")
		if confirm.status != http.StatusOK {
			t.Fatalf("the restore confirmation: %d %s", confirm.status, text(confirm))
		}
		rows := restoreRows(confirm)
		for field, want := range map[string][2]string{
			"Name":      {"After name", "Before name"},
			"Tags":      {"new, shop", "old"},
			"Notes":     {"new notes", "old notes"},
			"Locale":    {"de-DE", "en-US"},
			"Time zone": {"Europe/Berlin", "America/New_York"},
		} {
			if rows[field] != want {
				t.Errorf("the restore of %s shows %q, want %q", field, rows[field], want)
			}
		}
		if px := rows["Proxy"]; px[0] != "none" || !strings.HasPrefix(px[1], "socks5://proxy.example.com:1080") {
			t.Errorf("the restore of the proxy shows %q, want none → socks5://proxy.example.com:1080", px)
		}
		if d := rows["Browser data"]; !strings.Contains(d[0], shaB[:12]) || !strings.Contains(d[1], shaA[:12]) {
			t.Errorf("the restore of the data shows %q, want %s → %s", d, shaB[:12], shaA[:12])
		}
		for _, same := range []string{"Template", "Platform", "User agent", "Screen", "Cookies"} {
			if v, ok := rows[same]; ok {
				t.Errorf("the restore lists %s as changed: %q", same, v)
			}
		}
		if !strings.Contains(text(confirm), "automatic snapshot") || !slices.Contains(actions(confirm), "POST "+base+"/snapshots/"+sid+"/restore") {
			t.Errorf("the confirmation does not say the current state is kept, or offers no restore: %v %s", actions(confirm), text(confirm))
		}

		// A running profile is not restored: the page says to release it.
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		running := u.get(base + "/snapshots/" + sid + "/restore")
		if !strings.Contains(text(running), "Release it first") || slices.Contains(actions(running), "POST "+base+"/snapshots/"+sid+"/restore") {
			t.Errorf("the confirmation while running: %v %s", actions(running), text(running))
		}
		if p := u.post(base+"/snapshots/"+sid+"/restore", url.Values{}); p.status != http.StatusConflict || !strings.Contains(text(p), "release it first") {
			t.Errorf("a restore while running: %d %s", p.status, text(p))
		}
		if got := str(h.get("/api/v1/profiles/"+id, auth...).data()["name"]); got != "After name" {
			t.Errorf("the refused restore changed the name to %q", got)
		}
		expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)

		done := u.follow(u.post(base+"/snapshots/"+sid+"/restore", url.Values{}))
		if !strings.Contains(text(done), "Snapshot restored") || !strings.Contains(text(done), "auto") {
			t.Errorf("after the restore: %s", text(done))
		}
		p := h.get("/api/v1/profiles/"+id, auth...).data()
		fp := p["fingerprint"].(map[string]any)
		if str(p["name"]) != "Before name" || str(p["notes"]) != "old notes" || !reflect.DeepEqual(p["tags"], []any{"old"}) ||
			str(fp["locale"]) != "en-US" || str(fp["timezone"]) != "America/New_York" || apiSHA(t, h, a, id) != shaA ||
			p["proxy"] == nil || str(p["proxy"].(map[string]any)["host"]) != "proxy.example.com" {
			t.Errorf("the API after the restore: %v", p)
		}
		snaps = asList(h.get("/api/v1/time-machine/"+id+"/snapshots", auth...).env["data"])
		if len(snaps) != 2 || str(snaps[0].(map[string]any)["kind"]) != "auto" ||
			str(snaps[0].(map[string]any)["profile"].(map[string]any)["name"]) != "After name" {
			t.Fatalf("the snapshots after the restore: %v", snaps)
		}
		auto := str(snaps[0].(map[string]any)["id"])

		// Restored, the profile is as the snapshot kept it.
		if same := u.get(base + "/snapshots/" + sid + "/restore"); !strings.Contains(text(same), "Nothing differs") || len(restoreRows(same)) != 0 {
			t.Errorf("the confirmation of the restored snapshot: %v %s", restoreRows(same), text(same))
		}
		// The automatic snapshot undoes it.
		if rows := restoreRows(u.get(base + "/snapshots/" + auto + "/restore")); rows["Name"] != [2]string{"Before name", "After name"} {
			t.Errorf("the undo would change the name: %q", rows["Name"])
		}

		// Deleting a snapshot asks first.
		if p := u.get(base + "/snapshots/" + auto + "/delete"); p.status != http.StatusOK || !slices.Contains(actions(p), "POST "+base+"/snapshots/"+auto+"/delete") {
			t.Fatalf("the snapshot delete confirmation: %d %v", p.status, actions(p))
		}
		if p := u.follow(u.post(base+"/snapshots/"+auto+"/delete", url.Values{})); !strings.Contains(text(p), "Snapshot deleted") {
			t.Errorf("after deleting the snapshot: %s", text(p))
		}
		if n := len(asList(h.get("/api/v1/time-machine/"+id+"/snapshots", auth...).env["data"])); n != 1 {
			t.Errorf("%d snapshots after the delete, want 1", n)
		}
	})
}

// dataPosts are the console's state-changing requests of this part: each
// sent as a browser would (a multipart upload or a form).
type dataPost struct {
	path            string
	field, filename string
	file            []byte
	form            url.Values
}

func (u *consoleUser) sendData(p dataPost, headers ...string) consolePage {
	u.t.Helper()
	if p.field != "" {
		return u.upload(p.path, p.field, p.filename, p.file, headers...)
	}
	return u.post(p.path, p.form, headers...)
}

func dataPosts(t *testing.T, id, sid string) []dataPost {
	base := "/app/profiles/" + id
	return []dataPost{
		{path: base + "/data", field: "archive", filename: "b.tar.gz", file: testArchive(t, archiveB)},
		{path: base + "/cookies", field: "cookies", filename: "cookies.json", file: cookiesJSON(t, cookiesB)},
		{path: base + "/data/delete", form: url.Values{}},
		{path: base + "/snapshots", form: url.Values{"label": {"forged"}}},
		{path: base + "/snapshots/" + sid + "/restore", form: url.Values{}},
		{path: base + "/snapshots/" + sid + "/delete", form: url.Values{}},
	}
}

func dataPages(id, sid string) []string {
	base := "/app/profiles/" + id
	return []string{base + "/data", base + "/data/delete", base + "/snapshots", base + "/snapshots/" + sid + "/restore", base + "/snapshots/" + sid + "/delete"}
}

// withDataAndSnapshot makes a profile with data, cookies and a snapshot,
// then changes it, so that every action of this part would change it.
func withDataAndSnapshot(t *testing.T, h *harness, a account, name string) (id, sid string) {
	t.Helper()
	auth := bearer(a.access)
	id = h.createProfile(t, a, map[string]any{"name": name})
	expect(t, h.do(archiveReq(id, testArchive(t, archiveA), auth)), http.StatusOK)
	expect(t, h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + id + "/cookies", body: cookiesA, headers: pairs(auth)}), http.StatusOK)
	snap := h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": "kept"}, auth...)
	expect(t, snap, http.StatusCreated)
	expect(t, h.patch("/api/v1/profiles/"+id, map[string]any{"notes": "changed since"}, auth...), http.StatusOK)
	return id, str(snap.data()["id"])
}

func TestConsoleDataViewerSeesNoActionAndIsRefusedAnyway(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, viewer, member := h.register(t), h.register(t), h.register(t)
		h.member(t, owner, viewer, team.RoleViewer)
		h.member(t, owner, member, team.RoleMember)
		id, sid := withDataAndSnapshot(t, h, owner, "Watched")
		before := h.dataState(t, owner, id)

		u := h.console(t)
		u.signin(viewer)
		if p := u.post("/app/team/switch", url.Values{"team": {owner.teamID}}); p.status != http.StatusSeeOther {
			t.Fatalf("switch: %d %s", p.status, text(p))
		}
		for _, path := range dataPages(id, sid) {
			p := u.get(path)
			if p.status != http.StatusOK || !strings.Contains(text(p), "Watched") {
				t.Fatalf("%s: the viewer does not see the team's profile: %d %s", path, p.status, text(p))
			}
			for _, act := range actions(p) {
				if act != "POST /app/signout" && act != "POST /app/team/switch" {
					t.Errorf("%s offers the viewer %s", path, act)
				}
			}
			walk(p.doc, func(n *html.Node) {
				if href := attr(n, "href"); n.Data == "a" && (strings.HasSuffix(href, "/data/archive") || strings.HasSuffix(href, "/cookies.json") || strings.HasSuffix(href, "/delete")) {
					t.Errorf("%s links the viewer to %s", path, href)
				}
			})
		}
		// The data hold the sessions of the profile's accounts: a viewer
		// downloads neither them nor the cookies.
		for _, path := range []string{"/app/profiles/" + id + "/data/archive", "/app/profiles/" + id + "/cookies.json"} {
			if p := u.get(path); p.status != http.StatusForbidden || !strings.Contains(text(p), "Not allowed") {
				t.Errorf("the viewer's GET %s: %d %s", path, p.status, truncate([]byte(p.body)))
			}
		}
		for _, post := range dataPosts(t, id, sid) {
			if p := u.sendData(post); p.status != http.StatusForbidden || !strings.Contains(text(p), "Not allowed") {
				t.Errorf("the viewer's POST %s: %d %s", post.path, p.status, text(p))
			}
		}
		if got := h.dataState(t, owner, id); !reflect.DeepEqual(got, before) {
			t.Errorf("the viewer's refused actions changed the profile: %+v, was %+v", got, before)
		}

		// A member restores but does not delete snapshots: admins do.
		m := h.console(t)
		m.signin(member)
		m.post("/app/team/switch", url.Values{"team": {owner.teamID}})
		list := m.get("/app/profiles/" + id + "/snapshots")
		walk(list.doc, func(n *html.Node) {
			if n.Data == "a" && strings.HasSuffix(attr(n, "href"), "/delete") {
				t.Errorf("the member is offered %s", attr(n, "href"))
			}
		})
		if acts := actions(m.get("/app/profiles/" + id + "/snapshots/" + sid + "/delete")); slices.Contains(acts, "POST /app/profiles/"+id+"/snapshots/"+sid+"/delete") {
			t.Errorf("the member's delete page offers %v", acts)
		}
		if p := m.post("/app/profiles/"+id+"/snapshots/"+sid+"/delete", url.Values{}); p.status != http.StatusForbidden {
			t.Errorf("the member's snapshot delete: %d %s", p.status, text(p))
		}
		if acts := actions(m.get("/app/profiles/" + id + "/snapshots/" + sid + "/restore")); !slices.Contains(acts, "POST /app/profiles/"+id+"/snapshots/"+sid+"/restore") {
			t.Errorf("the member's restore page offers %v", acts)
		}
		if got := h.dataState(t, owner, id); !reflect.DeepEqual(got, before) {
			t.Errorf("the member's refused delete changed the profile: %+v, was %+v", got, before)
		}
	})
}

func TestConsoleDataCannotReachAnotherTeam(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		victim, attacker := h.register(t), h.register(t)
		id, sid := withDataAndSnapshot(t, h, victim, "Secret")
		before := h.dataState(t, victim, id)
		u := h.console(t)
		u.signin(attacker)
		for _, path := range append(dataPages(id, sid), "/app/profiles/"+id+"/data/archive", "/app/profiles/"+id+"/cookies.json") {
			if p := u.get(path); p.status != http.StatusNotFound || strings.Contains(p.body, "Secret") || strings.Contains(p.body, "a-session") {
				t.Errorf("GET %s: %d %s", path, p.status, truncate([]byte(p.body)))
			}
		}
		for _, post := range dataPosts(t, id, sid) {
			if p := u.sendData(post); p.status != http.StatusNotFound || strings.Contains(p.body, "Secret") {
				t.Errorf("POST %s: %d %s", post.path, p.status, text(p))
			}
		}
		// The attacker's own profile does not open the victim's snapshot.
		own := h.createProfile(t, attacker, map[string]any{"name": "Own"})
		for _, path := range []string{"/app/profiles/" + own + "/snapshots/" + sid + "/restore", "/app/profiles/" + own + "/snapshots/" + sid + "/delete"} {
			if p := u.get(path); p.status != http.StatusNotFound {
				t.Errorf("GET %s: %d %s", path, p.status, text(p))
			}
			if p := u.post(path, url.Values{}); p.status != http.StatusNotFound {
				t.Errorf("POST %s: %d %s", path, p.status, text(p))
			}
		}
		if got := h.dataState(t, victim, id); !reflect.DeepEqual(got, before) {
			t.Errorf("the victim's profile changed: %+v, was %+v", got, before)
		}
	})
}

func TestConsoleDataRefusesCrossSiteRequests(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	id, sid := withDataAndSnapshot(t, h, a, "Target")
	before := h.dataState(t, a, id)
	u := h.console(t)
	u.signin(a)
	forged := map[string][]string{
		"a page of another site":         {"Origin", "https://attacker.test", "Sec-Fetch-Site", "cross-site"},
		"a sibling site":                 {"Origin", "https://evil.localhost", "Sec-Fetch-Site", "same-site"},
		"an old browser, another origin": {"Origin", "https://attacker.test", "Sec-Fetch-Site", ""},
	}
	for _, post := range dataPosts(t, id, sid) {
		for how, headers := range forged {
			if p := u.sendData(post, headers...); p.status != http.StatusForbidden || !strings.Contains(text(p), "came from another site") {
				t.Errorf("POST %s from %s: %d %s", post.path, how, p.status, text(p))
			}
		}
	}
	if got := h.dataState(t, a, id); !reflect.DeepEqual(got, before) {
		t.Errorf("the forged requests changed the profile: %+v, was %+v", got, before)
	}
}

func TestConsoleDataPagesCannotBeFramedAndRunNoInlineScript(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	id, sid := withDataAndSnapshot(t, h, a, "Framed")
	u := h.console(t)
	u.signin(a)
	paths := append(dataPages(id, sid), "/app/profiles/prf_missing/data", "/app/profiles/"+id+"/snapshots/snap_missing/restore")
	for _, path := range append(paths, "/app/profiles/"+id+"/data/archive", "/app/profiles/"+id+"/cookies.json") {
		checkConsolePage(t, "GET "+path, u.get(path))
	}
}
