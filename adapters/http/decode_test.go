package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
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

type strictInput struct {
	Name    string            `json:"name"`
	Screen  *screenInput      `json:"screen"`
	Tags    []string          `json:"tags"`
	Labels  map[string]string `json:"labels"`
	Proxy   jsontext.Value    `json:"proxy"`
	Ignored string            `json:"-"`
	embeddedInput
}

type embeddedInput struct {
	Notes string `json:"notes"`
}

func TestDecodeRefusesWhatIsNotExactNamingTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, field, issue string }{
		"other case":            {`{"Name":"a"}`, "Name", "is not allowed"},
		"other case, nested":    {`{"screen":{"WIDTH":1}}`, "screen.WIDTH", "is not allowed"},
		"other case, embedded":  {`{"NOTES":"n"}`, "NOTES", "is not allowed"},
		"other case, escaped":   {`{"N\u0061me":"a"}`, "Name", "is not allowed"},
		"ignored field":         {`{"Ignored":"a"}`, "Ignored", "is not allowed"},
		"unknown, nested":       {`{"screen":{"depth":1}}`, "screen.depth", "is not allowed"},
		"unknown in an array":   {`{"tags":["a"],"screen":{"width":1,"x":[{"y":1}]}}`, "screen.x", "is not allowed"},
		"duplicate":             {`{"name":"a","name":"b"}`, "name", "is given more than once"},
		"duplicate, nested":     {`{"screen":{"width":1,"height":2,"width":3}}`, "screen.width", "is given more than once"},
		"duplicate in a map":    {`{"labels":{"k":"a","k":"b"}}`, "labels.k", "is given more than once"},
		"duplicate, raw":        {`{"proxy":{"id":"a","id":"b"}}`, "proxy.id", "is given more than once"},
		"duplicate, raw array":  {`{"proxy":[1,{"id":"a","id":"b"}]}`, "proxy[1].id", "is given more than once"},
		"duplicate, escaped":    {`{"name":"a", "n\u0061me" : "b"}`, "name", "is given more than once"},
		"after every kind":      {"{ \"screen\" : { \"width\" : -15 , \"height\":0 } ,\n\t\"tags\":[ ],\"labels\":{ },\"proxy\":[true,false,null,-1.5e+3],\"notes\":\"n\",\"notes\":\"m\"}", "notes", "is given more than once"},
		"NUL":                   {`{"name":"a\u0000"}`, "name", "must not contain NUL characters"},
		"NUL in an array":       {`{"tags":["a","\u0000"]}`, "tags[1]", "must not contain NUL characters"},
		"NUL in a map value":    {`{"labels":{"k":"\u0000"}}`, "labels.k", "must not contain NUL characters"},
		"NUL in a map key":      {`{"labels":{"k\u0000":"v"}}`, `labels.k\x00`, "must not contain NUL characters"},
		"NUL in a name":         {`{"na\u0000me":"a"}`, `na\x00me`, "is not allowed"},
		"invalid byte":          {"{\"name\":\"a\xffb\"}", "name", "must be valid UTF-8"},
		"truncated sequence":    {"{\"name\":\"\xe2\x82\"}", "name", "must be valid UTF-8"},
		"invalid, in an array":  {"{\"tags\":[\"a\",\"\xc3\x28\"]}", "tags[1]", "must be valid UTF-8"},
		"invalid, raw":          {"{\"proxy\":{\"id\":\"prx_\xff\"}}", "proxy.id", "must be valid UTF-8"},
		"invalid name":          {"{\"n\xffame\":\"a\"}", "body", "must be valid UTF-8"},
		"invalid nested name":   {"{\"screen\":{\"w\xffidth\":1}}", "screen", "must be valid UTF-8"},
		"lone high surrogate":   {`{"name":"a\ud800"}`, "name", "must be valid UTF-8"},
		"lone low surrogate":    {`{"name":"\udc00b"}`, "name", "must be valid UTF-8"},
		"reversed surrogates":   {`{"name":"\udc00\ud800"}`, "name", "must be valid UTF-8"},
		"surrogate beside FFFD": {`{"name":"\ufffd\ud800"}`, "name", "must be valid UTF-8"},
		"type, in an array":     {`{"tags":["a",2]}`, "tags", "must be a string"},
	}
	for name, c := range cases {
		w := decodeStatus(t, "application/json", []byte(c.body), &strictInput{})
		env := expectError(t, w, http.StatusUnprocessableEntity, "validation_failed")
		if d := env.Error.Details; len(d) != 1 || d[0].Field != c.field || d[0].Issue != c.issue {
			t.Errorf("%s: %s: details %+v, want %s: %s", name, c.body, d, c.field, c.issue)
		}
	}
}

func TestDecodeAcceptsWhatIsExact(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]strictInput{
		`{"name":"a","screen":{"width":1,"height":2},"tags":["x","y"],"notes":"n"}`: {
			Name: "a", Screen: &screenInput{Width: 1, Height: 2}, Tags: []string{"x", "y"}, embeddedInput: embeddedInput{Notes: "n"}},
		// The same name in different objects is not a duplicate.
		`{"name":"a","labels":{"name":"b","Name":"c"}}`: {Name: "a", Labels: map[string]string{"name": "b", "Name": "c"}},
		// A replacement character the client sent, raw or escaped, and a
		// surrogate pair, are text like any other.
		`{"name":"a` + "\uFFFD" + `b\ufffd\uFFFD","tags":["\ud83d\ude00"]}`: {Name: "a\uFFFDb\uFFFD\uFFFD", Tags: []string{"😀"}},
		// Names inside a value the DTO keeps as JSON are its own.
		`{"proxy":{"ID":"prx_1"}}`: {Proxy: jsontext.Value(`{"ID":"prx_1"}`)},
	} {
		var in strictInput
		if w := decodeStatus(t, "application/json", []byte(body), &in); w.Code != http.StatusOK {
			t.Errorf("%s: %d %s", body, w.Code, w.Body.Bytes())
			continue
		}
		if !reflect.DeepEqual(in, want) {
			t.Errorf("%s: decoded %+v, want %+v", body, in, want)
		}
	}
}

// The first fault in the body is the one reported: a syntax error before a
// duplicate name is malformed JSON.
func TestDecodeReportsMalformedJSONBeforeALaterDuplicate(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"screen":{"width":01},"name":"a","name":"b"}`,
		`{"screen":{"width":1.},"name":"a","name":"b"}`,
		`{"screen":{"width":-},"name":"a","name":"b"}`,
		`{"proxy":tru,"name":"a","name":"b"}`,
		`{"tags":["a",],"name":"a","name":"b"}`,
		`{"name":"a",}`,
		"{\"name\":\"a\tb\",\"name\":\"c\"}",
		`{"name":"\uZZZZ"}`,
	} {
		expectError(t, decodeStatus(t, "application/json", []byte(body), &strictInput{}), http.StatusBadRequest, "bad_request")
	}
}

// Nesting far beyond what any request needs is refused as a client error,
// whether the DTO keeps the value as JSON or expects something else there.
func TestDecodeRefusesDeepNesting(t *testing.T) {
	t.Parallel()
	const depth = 100_000
	for _, field := range []string{"proxy", "labels", "unknown"} {
		body := `{"` + field + `":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		w := decodeStatus(t, "application/json", []byte(body), &strictInput{})
		if w.Code != http.StatusBadRequest && w.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s nested %d deep: %d %s", field, depth, w.Code, w.Body.Bytes())
		}
	}
}

func TestDecodeJSONIsStrict(t *testing.T) {
	t.Parallel()
	// encoding/json would have filled Name with "b".
	w := decodeStatus(t, "application/json", []byte(`{"name":"a","Name":"b"}`), &plainInput{})
	env := expectError(t, w, http.StatusUnprocessableEntity, "validation_failed")
	if len(env.Error.Details) != 1 || env.Error.Details[0].Field != "Name" {
		t.Fatalf("details %+v", env.Error.Details)
	}
}
