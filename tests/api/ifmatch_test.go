package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// missingProfile is a well-formed profile id that no team has.
const missingProfile = "prf_01jv1wbmq5awsh8vhtpre95b9e"

// eachBackendParallel runs fn once per storage adapter, side by side, each
// with its own service.
func eachBackendParallel(t *testing.T, fn func(t *testing.T, h *harness)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, start(t, options{databaseURL: b.url(t)}))
		})
	}
}

// TestDataIfMatchFollowsRFC9110: If-Match on PUT .../data is "*" or a list
// of entity tags compared strongly (RFC 9110, section 13.1.1). A
// well-formed tag that does not match is 412, as is every weak tag; only a
// field that is neither "*" nor entity tags is 400; a missing profile is
// 404 whatever the field says.
func TestDataIfMatchFollowsRFC9110(t *testing.T) {
	t.Parallel()
	eachBackendParallel(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		zeros, ones := `"`+strings.Repeat("0", 64)+`"`, `"`+strings.Repeat("1", 64)+`"`
		put := func(files archiveFiles, ifMatch string) response {
			t.Helper()
			return h.do(archiveReq(id, testArchive(t, files), append(auth, "If-Match", ifMatch)))
		}
		refused := func(r response, status int, code string) {
			t.Helper()
			expect(t, r, status)
			if r.errCode() != code {
				t.Fatalf("code %q, want %q: %s", r.errCode(), code, r.raw)
			}
		}

		// No data yet: nothing matches, not even "*".
		for _, v := range []string{`"0000"`, `""`, `"*"`, "*", zeros, "W/" + zeros, `"0000", ` + zeros} {
			refused(put(archiveA, v), http.StatusPreconditionFailed, "precondition_failed")
		}
		for _, v := range []string{"not-a-hash", `"0000`, `*, "0000"`, `W/0000`, `"00 00"`} {
			refused(put(archiveA, v), http.StatusBadRequest, "bad_request")
		}
		refused(h.do(archiveReq(missingProfile, testArchive(t, archiveA), append(auth, "If-Match", `"0000"`))), http.StatusNotFound, "not_found")

		first := put(archiveA, "")
		expect(t, first, http.StatusOK)
		etag := first.header.Get("ETag")

		// Data now: "*" matches, a weak tag never does, and a list matches
		// when one of its strong tags does.
		expect(t, put(archiveB, "*"), http.StatusOK)
		_, cur := h.download(t, id, auth)
		for _, v := range []string{`"0000"`, etag, "W/" + `"` + cur + `"`, `"0000", W/"` + cur + `"`, zeros + ", " + ones} {
			refused(put(archiveA, v), http.StatusPreconditionFailed, "precondition_failed")
		}
		if _, after := h.download(t, id, auth); after != cur {
			t.Fatalf("data changed to %s by refused uploads, want %s", after, cur)
		}
		expect(t, put(archiveA, `"0000", W/"`+cur+`", "`+cur+`"`), http.StatusOK)
		_, cur = h.download(t, id, auth)
		// Two sha256s, the second the data's.
		expect(t, put(archiveB, zeros+`, "`+cur+`"`), http.StatusOK)
		// The bare sha256 this API asked for before stays understood.
		_, cur = h.download(t, id, auth)
		expect(t, put(archiveA, cur), http.StatusOK)
	})
}

// TestProfileIfMatchFollowsRFC9110: on PATCH /profiles/{id} a well-formed
// tag that is not the current version, a version number or not, is 412; a
// weak tag never matches; only a malformed field is 400.
func TestProfileIfMatchFollowsRFC9110(t *testing.T) {
	t.Parallel()
	eachBackendParallel(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, map[string]any{"name": "Kept"})
		patch := func(name, ifMatch string) response {
			t.Helper()
			return h.patch("/api/v1/profiles/"+id, map[string]any{"name": name}, append(auth, "If-Match", ifMatch)...)
		}

		for _, v := range []string{`"0000"`, `"abc"`, `""`, `"01"`, `"2"`, `W/"1"`, `"7", W/"1"`} {
			r := patch("Lost", v)
			expect(t, r, http.StatusPreconditionFailed)
			if r.errCode() != "precondition_failed" {
				t.Fatalf("If-Match %s: code %q", v, r.errCode())
			}
		}
		for _, v := range []string{"abc", `"1`, `W/1`, `*, "1"`, `"1" "2"`} {
			r := patch("Lost", v)
			expect(t, r, http.StatusBadRequest)
			if r.errCode() != "bad_request" {
				t.Fatalf("If-Match %s: code %q", v, r.errCode())
			}
		}
		r := h.patch("/api/v1/profiles/"+missingProfile, map[string]any{"name": "Lost"}, append(auth, "If-Match", `"0000"`)...)
		expect(t, r, http.StatusNotFound)
		if got := h.get("/api/v1/profiles/"+id, auth...).data(); got["name"] != "Kept" || got["version"] != float64(1) {
			t.Fatalf("profile after refused updates: %v", got)
		}

		// A list matches by its current version; the bare number this API
		// asked for before stays understood.
		for i, v := range []string{`"7", "1"`, "*", "3", `W/"3", "4"`} {
			r := patch("Changed "+strconv.Itoa(i), v)
			expect(t, r, http.StatusOK)
			if got, want := r.header.Get("ETag"), `"`+strconv.Itoa(i+2)+`"`; got != want {
				t.Fatalf("If-Match %s: ETag %s after the update, want %s", v, got, want)
			}
		}
	})
}
