package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type screenInput struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type profileInput struct {
	Name   string      `json:"name"`
	Tags   []string    `json:"tags"`
	Screen screenInput `json:"screen"`
}

func (*profileInput) readOnlyFields() []string { return []string{"session"} }

type plainInput struct {
	Name string `json:"name"`
}

// decodeStatus runs decodeJSON the way a handler does and returns what the
// client would see.
func decodeStatus(t *testing.T, contentType string, body []byte, dst any) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	if err := decodeJSON(w, r, dst); err != nil {
		writeError(w, r, err)
		return w
	}
	writeJSON(w, http.StatusOK, dst)
	return w
}

func TestDecodeAcceptsJSON(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8"} {
		var in profileInput
		w := decodeStatus(t, ct, []byte(` {"name":"a","tags":["x"],"screen":{"width":3,"height":4}} `), &in)
		if w.Code != 200 {
			t.Fatalf("%q: %d %s", ct, w.Code, w.Body.Bytes())
		}
		if in.Name != "a" || len(in.Tags) != 1 || in.Screen.Height != 4 {
			t.Fatalf("decoded %+v", in)
		}
	}
}

func TestDecodeRefusesOtherMediaTypes(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonx", "application/json;;"} {
		w := decodeStatus(t, ct, []byte(`{"name":"a"}`), &plainInput{})
		expectError(t, w, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
}

func TestDecodeBodyLimit(t *testing.T) {
	t.Parallel()
	// Exactly 1 MiB is allowed.
	pad := maxBodyBytes - len(`{"name":""}`)
	w := decodeStatus(t, "application/json", []byte(`{"name":"`+strings.Repeat("a", pad)+`"}`), &plainInput{})
	if w.Code != 200 {
		t.Fatalf("1 MiB body: %d", w.Code)
	}
	w = decodeStatus(t, "application/json", []byte(`{"name":"`+strings.Repeat("a", pad+1)+`"}`), &plainInput{})
	expectError(t, w, http.StatusRequestEntityTooLarge, "payload_too_large")

	// A body too large is 413 even when it is not JSON at all, and without
	// a declared length (chunked).
	r := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(bytes.Repeat([]byte("x"), maxBodyBytes+1)))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	writeError(w, r, decodeJSON(w, r, &plainInput{}))
	expectError(t, w, http.StatusRequestEntityTooLarge, "payload_too_large")
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `   `, `{`, `{"name":}`, `{"name":"a"}{"name":"b"}`, `{"name":"a"} x`, `null`, `[{"name":"a"}]`, `"a"`} {
		w := decodeStatus(t, "application/json", []byte(body), &plainInput{})
		expectError(t, w, http.StatusBadRequest, "bad_request")
	}
}

func TestDecodeFieldErrorsNameTheField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body, field, issue string
	}{
		{`{"name":"a","color":"red"}`, "color", "is not allowed"},
		{`{"name":"a","id":"prf_1"}`, "id", "is read-only"},
		{`{"createdAt":1}`, "createdAt", "is read-only"},
		{`{"teamId":"team_1"}`, "teamId", "is read-only"},
		{`{"status":"running"}`, "status", "is read-only"},
		{`{"session":{}}`, "session", "is read-only"},
		{`{"name":7}`, "name", "must be a string"},
		{`{"tags":"x"}`, "tags", "must be an array"},
		{`{"tags":[1]}`, "tags", "must be a string"},
		{`{"screen":{"width":"wide"}}`, "screen.width", "must be an integer"},
		{`{"screen":{"width":1.5}}`, "screen.width", "must be an integer"},
		{`{"screen":[]}`, "screen", "must be an object"},
	}
	for _, c := range cases {
		w := decodeStatus(t, "application/json", []byte(c.body), &profileInput{})
		env := expectError(t, w, http.StatusUnprocessableEntity, "validation_failed")
		if len(env.Error.Details) != 1 || env.Error.Details[0].Field != c.field || env.Error.Details[0].Issue != c.issue {
			t.Errorf("%s: details %+v, want %s %q", c.body, env.Error.Details, c.field, c.issue)
		}
	}
}

func TestDecodeReadOnlyListIsPerDTO(t *testing.T) {
	t.Parallel()
	// "session" is read-only only for the DTO that says so.
	w := decodeStatus(t, "application/json", []byte(`{"session":{}}`), &plainInput{})
	env := expectError(t, w, http.StatusUnprocessableEntity, "validation_failed")
	if env.Error.Details[0].Issue != "is not allowed" {
		t.Fatalf("issue %q", env.Error.Details[0].Issue)
	}
}

func TestDecodeDeclaredFieldNamedLikeAReadOnlyOneIsAccepted(t *testing.T) {
	t.Parallel()
	// A DTO that declares status (member removal does) can set it.
	var in struct {
		Status string `json:"status"`
	}
	if w := decodeStatus(t, "application/json", []byte(`{"status":"removed"}`), &in); w.Code != 200 || in.Status != "removed" {
		t.Fatalf("%d %+v", w.Code, in)
	}
}
