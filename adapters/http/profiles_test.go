package httpapi

import (
	"errors"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

func TestProfileProxyReadsEachForm(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		raw    string
		id     string
		inline *proxy.Input
	}{
		"absent":  {"", "", nil},
		"null":    {"null", "", nil},
		"stored":  {`{"id":"prx_1"}`, "prx_1", nil},
		"fields":  {`{"type":"socks5","host":"h.example","port":1080,"username":"u","password":"p"}`, "", &proxy.Input{Type: "socks5", Host: "h.example", Port: 1080, Username: "u", Password: "p"}},
		"url":     {`{"url":"http://h.example:8080"}`, "", &proxy.Input{URL: "http://h.example:8080"}},
		"escaped": {`{"host":"h\u002eexample"}`, "", &proxy.Input{Host: "h.example"}},
	}
	for name, c := range cases {
		var raw jsontext.Value
		if c.raw != "" {
			raw = jsontext.Value(c.raw)
		}
		id, inline, err := profileProxy(raw)
		if err != nil || id != c.id || !reflect.DeepEqual(inline, c.inline) {
			t.Errorf("%s: %q, %+v, %v; want %q, %+v", name, id, inline, err, c.id, c.inline)
		}
	}
}

func TestProfileProxyRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ raw, field, issue string }{
		"NUL in the id":        {`{"id":"prx_\u0000"}`, "proxy.id", "must not contain NUL characters"},
		"NUL in the host":      {`{"type":"http","host":"h\u0000","port":80}`, "proxy.host", "must not contain NUL characters"},
		"NUL in a name":        {`{"i\u0000d":"prx_1"}`, `proxy.i\x00d`, "must not contain NUL characters"},
		"id and more":          {`{"id":"prx_1","host":"h"}`, "proxy", `must be null or {"id": "prx_..."} naming a stored proxy`},
		"empty id":             {`{"id":""}`, "proxy", `must be null or {"id": "prx_..."} naming a stored proxy`},
		"id not a string":      {`{"id":7}`, "proxy", `must be null or {"id": "prx_..."} naming a stored proxy`},
		"a string":             {`"prx_1"`, "proxy", `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`},
		"unknown member":       {`{"type":"http","hots":"h"}`, "proxy", `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`},
		"other case":           {`{"Host":"h"}`, "proxy", `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`},
		"port not a number":    {`{"type":"http","host":"h","port":"80"}`, "proxy", `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`},
		"a name":               {`{"type":"http","host":"h","port":80,"name":"n"}`, "proxy", `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`},
		"url and fields":       {`{"url":"http://h:1","host":"h"}`, "url", "give either url or type, host and port, not both"},
		"NUL beside a bad one": {`{"host":"\u0000","port":"x"}`, "proxy.host", "must not contain NUL characters"},
	}
	for name, c := range cases {
		_, _, err := profileProxy(jsontext.Value(c.raw))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) != 1 ||
			de.Fields[0] != (domain.FieldIssue{Field: c.field, Issue: c.issue}) {
			t.Errorf("%s: %s: got %v, want 422 %s: %s", name, c.raw, err, c.field, c.issue)
		}
	}
}
