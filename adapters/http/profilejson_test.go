package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
)

// oddStrings are strings encoding/json escapes, or that look as if it might.
var oddStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\r\x00\x1f",
	"é ünïcode 東京", "\u2028\u2029", "bad \xff\xfe utf-8", "emoji 🎭", "/slash/", "\x7f del",
}

func randomProfileDTO(r *rand.Rand) profileDTO {
	str := func() string { return oddStrings[r.IntN(len(oddStrings))] }
	d := profileDTO{
		ID: str(), Name: str(), TemplateID: str(), Browser: str(),
		Fingerprint: fingerprintDTO{UserAgent: str(), Platform: str(), Locale: str(), Timezone: str(),
			Screen: screenDTO{Width: r.IntN(5000) - 10, Height: r.IntN(5000)}},
		Notes: str(), Status: str(), Version: r.IntN(1 << 30), CreatedAt: r.Int64() - r.Int64(), UpdatedAt: r.Int64(),
	}
	switch r.IntN(3) {
	case 0:
		d.Tags = []string{}
	case 1:
		d.Tags = []string{str(), str(), str()}
	}
	switch r.IntN(3) {
	case 1:
		d.Proxy = &proxyRefDTO{ID: str()}
	case 2:
		d.Proxy = &proxyRefDTO{ID: str(), Type: str(), Host: str(), Port: r.IntN(70000)}
	}
	if r.IntN(2) == 0 {
		s := &browserSessionDTO{ID: str(), StartedAt: r.Int64(), ExpiresAt: -r.Int64(), LaunchedBy: str(), Headless: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			u := str()
			s.CDPURL = &u
		}
		d.Session = s
	}
	if r.IntN(2) == 0 {
		d.Data = &dataDTO{SizeBytes: r.Int64(), SHA256: str(), UpdatedAt: r.Int64()}
	}
	return d
}

// The profile answers are written by hand; encoding/json is the reference
// they must equal, byte for byte, envelope and page included.
func TestProfileJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		d := randomProfileDTO(r)
		rec := httptest.NewRecorder()
		writeProfileBody(rec, 201, &d)
		want := httptest.NewRecorder()
		writeJSON(want, 201, d)
		if rec.Code != 201 || !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("profile %d:\n got %s\nwant %s", i, rec.Body, want.Body)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options"} {
			if rec.Header().Get(h) != want.Header().Get(h) {
				t.Fatalf("%s: %q, want %q", h, rec.Header().Get(h), want.Header().Get(h))
			}
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("profile %d is not JSON: %s", i, rec.Body)
		}
	}
	for _, n := range []int{0, 1, 50} {
		items := make([]profileDTO, n)
		for i := range items {
			items[i] = randomProfileDTO(r)
		}
		for _, cursor := range []string{"", "prf_01ABC", "odd <&> \xff"} {
			rec := httptest.NewRecorder()
			writeRendered(rec, 200, appendProfileList(nil, items, cursor, 50))
			want := httptest.NewRecorder()
			writeList(want, items, cursor, 50)
			if !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("page of %d, cursor %q:\n got %s\nwant %s", n, cursor, rec.Body, want.Body)
			}
		}
	}
}
