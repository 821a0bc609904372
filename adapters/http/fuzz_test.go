package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// fuzzInput has each kind of field a request DTO has.
type fuzzInput struct {
	Name   *string           `json:"name"`
	Tags   []string          `json:"tags"`
	Screen *screenInput      `json:"screen"`
	Labels map[string]string `json:"labels"`
	Proxy  jsontext.Value    `json:"proxy"`
	Count  *int              `json:"count"`
}

// FuzzDecodeJSON checks decodeJSON on any body: the answer is 200 or a
// client error, never a 500, and what it accepts is one valid JSON value
// whose strings are valid UTF-8 without NUL.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","tags":["x"],"screen":{"width":1,"height":2},"labels":{"k":"v"},"proxy":{"id":"prx_1"},"count":3}`,
		`{"Name":"a"}`, `{"name":"a","name":"b"}`, `{"name":"a\u0000"}`, "{\"name\":\"\xff\"}", `{"name":"\ud800"}`,
		`{"name":"\ufffd"}`, `{"tags":[` + strings.Repeat("[", 40), `null`, `[]`, `{"id":"x"}`, `{"count":1.5}`, `{} {}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in fuzzInput
		w := decodeStatus(t, "application/json", body, &in)
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			return
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.Bytes())
		}
		if !json.Valid(body) || !utf8.Valid(body) {
			t.Fatalf("accepted %q", body)
		}
		texts := append([]string{}, in.Tags...)
		if in.Name != nil {
			texts = append(texts, *in.Name)
		}
		for k, v := range in.Labels {
			texts = append(texts, k, v)
		}
		for _, s := range texts {
			if strings.IndexByte(s, 0) >= 0 || strings.Contains(s, "\uFFFD") && !strings.Contains(strings.ToLower(string(body)), `\ufffd`) && !strings.Contains(string(body), "\uFFFD") {
				t.Fatalf("accepted %q, decoded to %q", body, s)
			}
		}
	})
}
