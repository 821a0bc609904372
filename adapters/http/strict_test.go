package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/domain"
)

type strictInput struct {
	Name    string            `json:"name"`
	Screen  *screenInput      `json:"screen"`
	Tags    []string          `json:"tags"`
	Labels  map[string]string `json:"labels"`
	Proxy   json.RawMessage   `json:"proxy"`
	Ignored string            `json:"-"`
	embeddedInput
}

type embeddedInput struct {
	Notes string `json:"notes"`
}

func TestStrictJSONRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, field, issue string }{
		"other case":            {`{"Name":"a"}`, "Name", "is not allowed"},
		"other case, nested":    {`{"screen":{"WIDTH":1}}`, "screen.WIDTH", "is not allowed"},
		"other case, embedded":  {`{"NOTES":"n"}`, "NOTES", "is not allowed"},
		"duplicate":             {`{"name":"a","name":"b"}`, "name", "is given more than once"},
		"duplicate, nested":     {`{"screen":{"width":1,"height":2,"width":3}}`, "screen.width", "is given more than once"},
		"duplicate in a map":    {`{"labels":{"k":"a","k":"b"}}`, "labels.k", "is given more than once"},
		"duplicate, raw":        {`{"proxy":{"id":"a","id":"b"}}`, "proxy.id", "is given more than once"},
		"duplicate, escaped":    {`{"name":"a", "n\u0061me" : "b"}`, "name", "is given more than once"},
		"other case, escaped":   {`{"N\u0061me":"a"}`, "Name", "is not allowed"},
		"after every kind":      {"{ \"screen\" : { \"width\" : -1.5e+3 , \"height\":0 } ,\n\t\"tags\":[ ],\"labels\":{ },\"proxy\":[true,false,null],\"notes\":\"n\",\"notes\":\"m\"}", "notes", "is given more than once"},
		"NUL":                   {`{"name":"a\u0000"}`, "name", "must not contain NUL characters"},
		"NUL in an array":       {`{"tags":["a","\u0000"]}`, "tags[1]", "must not contain NUL characters"},
		"NUL in a map value":    {`{"labels":{"k":"\u0000"}}`, "labels.k", "must not contain NUL characters"},
		"NUL in a raw value":    {`{"proxy":{"id":"prx_\u0000"}}`, "proxy.id", "must not contain NUL characters"},
		"NUL in a name":         {`{"na\u0000me":"a"}`, `na\x00me`, "must not contain NUL characters"},
		"invalid byte":          {"{\"name\":\"a\xffb\"}", "name", "must be valid UTF-8"},
		"truncated sequence":    {"{\"name\":\"\xe2\x82\"}", "name", "must be valid UTF-8"},
		"invalid name":          {"{\"n\xffame\":\"a\"}", "n\uFFFDame", "must be valid UTF-8"},
		"lone high surrogate":   {`{"name":"a\ud800"}`, "name", "must be valid UTF-8"},
		"lone low surrogate":    {`{"name":"\udc00b"}`, "name", "must be valid UTF-8"},
		"reversed surrogates":   {`{"name":"\udc00\ud800"}`, "name", "must be valid UTF-8"},
		"surrogate beside FFFD": {`{"name":"\ufffd\ud800"}`, "name", "must be valid UTF-8"},
	}
	for name, c := range cases {
		var in strictInput
		err := checkStrictJSON([]byte(c.body), &in)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) != 1 ||
			de.Fields[0] != (domain.FieldIssue{Field: c.field, Issue: c.issue}) {
			t.Errorf("%s: %s: got %v, want 422 %s: %s", name, c.body, err, c.field, c.issue)
		}
	}
}

func TestStrictJSONAcceptsWhatIsExact(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"name":"a","screen":{"width":1,"height":2},"tags":["x","y"],"notes":"n"}`,
		// The same name in different objects is not a duplicate.
		`{"name":"a","screen":{"width":1,"height":2},"labels":{"name":"b","Name":"c"}}`,
		// A replacement character the client sent, raw or escaped, and a
		// surrogate pair, are text like any other.
		`{"name":"a` + "\uFFFD" + `b\ufffd\uFFFD","tags":["\ud83d\ude00"]}`,
		// Names inside a value decoded by its own method are its own.
		`{"proxy":{"ID":"prx_1"}}`,
		// Unknown names are left to the decoder, which names them itself.
		`{"color":"red"}`,
		// Malformed JSON too.
		`{"name":`,
		`{"name":"a"}}`,
		// A duplicate after a syntax error is the decoder's to report:
		// the walk stops at the error.
		`{"screen":{"width":01},"name":"a","name":"b"}`,
		`{"screen":{"width":1.},"name":"a","name":"b"}`,
		`{"screen":{"width":-},"name":"a","name":"b"}`,
		`{"proxy":tru,"name":"a","name":"b"}`,
		`{"tags":["a",],"name":"a","name":"b"}`,
		`{"name":"a",}`,
		"{\"name\":\"a\tb\",\"name\":\"c\"}",
	} {
		var in strictInput
		if err := checkStrictJSON([]byte(body), &in); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestStrictJSONBoundsNesting(t *testing.T) {
	t.Parallel()
	deep := `{"labels":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`
	var in strictInput
	if err := checkStrictJSON([]byte(deep), &in); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("40 levels deep: %v, want a bad request", err)
	}
	shallow := `{"labels":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`
	if err := checkStrictJSON([]byte(shallow), &in); err != nil {
		t.Fatalf("20 levels deep: %v", err)
	}
}

func TestDecodeJSONIsStrict(t *testing.T) {
	t.Parallel()
	// Through decodeJSON, as a handler sees it; before any of it reached
	// the DTO, encoding/json would have filled Name with "b".
	w := decodeStatus(t, "application/json", []byte(`{"name":"a","Name":"b"}`), &plainInput{})
	env := expectError(t, w, http.StatusUnprocessableEntity, "validation_failed")
	if len(env.Error.Details) != 1 || env.Error.Details[0].Field != "Name" {
		t.Fatalf("details %+v", env.Error.Details)
	}
}

func TestCheckParams(t *testing.T) {
	t.Parallel()
	reached := false
	h := checkParams(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	cases := map[string]struct {
		vars  map[string]string
		query string
		field string
	}{
		"NUL in a path id":       {map[string]string{"id": "prf_\x00"}, "", "id"},
		"invalid UTF-8 in an id": {map[string]string{"deliveryId": "dlv_\xc3\x28"}, "", "deliveryId"},
		"NUL in a query value":   {nil, "q=" + url.QueryEscape("a\x00"), "q"},
		"bad UTF-8 in a value":   {nil, "cursor=prf_%ff", "cursor"},
		"NUL in a query name":    {nil, url.QueryEscape("q\x00") + "=a", `q\x00`},
		"one of many values":     {nil, "tag=a&tag=b%00", "tag"},
	}
	for name, c := range cases {
		reached = false
		r := httptest.NewRequest(http.MethodGet, "/x?"+c.query, nil)
		r = mux.SetURLVars(r, c.vars)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		env := expectError(t, w, http.StatusBadRequest, "bad_request")
		if reached || len(env.Error.Details) != 1 || env.Error.Details[0].Field != c.field {
			t.Errorf("%s: reached %v, details %+v, want field %q", name, reached, env.Error.Details, c.field)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/x?q="+url.QueryEscape("ünïcode ✓")+"&cursor=prf_1", nil)
	r = mux.SetURLVars(r, map[string]string{"id": "prf_é"})
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !reached {
		t.Fatal("valid parameters were refused")
	}
}
