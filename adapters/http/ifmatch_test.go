package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
)

func TestParseIfMatch(t *testing.T) {
	t.Parallel()
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	for _, c := range []struct {
		name  string
		lines []string
		bare  func(string) bool
		want  ifMatchField
	}{
		{"no field", nil, nil, ifMatchField{}},
		{"empty list", []string{" , ,"}, nil, ifMatchField{}},
		{"star", []string{"*"}, nil, ifMatchField{present: true, any: true}},
		{"star with spaces", []string{" *\t"}, nil, ifMatchField{present: true, any: true}},
		{"one tag", []string{`"abc"`}, nil, ifMatchField{present: true, strong: []string{"abc"}}},
		{"weak tag", []string{`W/"abc"`}, nil, ifMatchField{present: true}},
		{"list", []string{`"a", "b"`}, nil, ifMatchField{present: true, strong: []string{"a", "b"}}},
		{"list without spaces", []string{`"a","b"`}, nil, ifMatchField{present: true, strong: []string{"a", "b"}}},
		{"weak in a list", []string{`"a" , W/"b",	"c"`}, nil, ifMatchField{present: true, strong: []string{"a", "c"}}},
		{"empty elements", []string{`, "a",, `}, nil, ifMatchField{present: true, strong: []string{"a"}}},
		{"two field lines", []string{`"a"`, `"b"`}, nil, ifMatchField{present: true, strong: []string{"a", "b"}}},
		{"empty tag", []string{`""`}, nil, ifMatchField{present: true, strong: []string{""}}},
		{"quoted star is a tag", []string{`"*"`}, nil, ifMatchField{present: true, strong: []string{"*"}}},
		{"obs-text", []string{"\"\x80\xff\""}, nil, ifMatchField{present: true, strong: []string{"\x80\xff"}}},
		{"bare number", []string{"3"}, digits, ifMatchField{present: true, strong: []string{"3"}}},
		{"bare number in a list", []string{`3, "4"`}, digits, ifMatchField{present: true, strong: []string{"3", "4"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseIfMatch(c.lines, c.bare)
			if err != nil || got.present != c.want.present || got.any != c.want.any || !slices.Equal(got.strong, c.want.strong) {
				t.Fatalf("parseIfMatch(%q) = %+v, %v; want %+v", c.lines, got, err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name  string
		value string
		bare  func(string) bool
	}{
		{"bare token", "abc", nil},
		{"bare token not accepted", "abc", digits},
		{"unterminated", `"abc`, nil},
		{"no comma", `"a" "b"`, nil},
		{"star in a list", `*, "a"`, nil},
		{"weak bare", `W/3`, digits},
		{"lower-case weak", `w/"a"`, nil},
		{"space in a tag", `"a b"`, nil},
		{"text after a tag", `"a"b`, nil},
		{"control in a tag", "\"a\x01\"", nil},
		{"weak prefix alone", `W/`, nil},
	} {
		t.Run("malformed "+c.name, func(t *testing.T) {
			if got, err := parseIfMatch([]string{c.value}, c.bare); err == nil {
				t.Fatalf("parseIfMatch(%q) = %+v, want an error", c.value, got)
			}
		})
	}
}

func ifMatchRequest(values ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPut, "/api/v1/profiles/prf_x/data", nil)
	for _, v := range values {
		r.Header.Add("If-Match", v)
	}
	return r
}

// TestDataIfMatch: a well-formed field that cannot match is a value no data
// have, which PutData answers 412; only a malformed field is 400. A single
// candidate needs no service.
func TestDataIfMatch(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	h := &DataHandlers{}
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"another tag", []string{`"0000"`}, "-"},
		{"weak tag of the data", []string{`W/"` + sum + `"`}, "-"},
		{"upper-case hex is another tag", []string{`"` + strings.ToUpper(sum) + `"`}, "-"},
		{"empty tag", []string{`""`}, "-"},
		{"quoted star", []string{`"*"`}, "-"},
		{"the data's ETag", []string{`"` + sum + `"`}, sum},
		{"bare sha256", []string{sum}, sum},
		{"one sha256 among tags that cannot match", []string{`W/"` + sum + `", "x", "` + sum + `"`}, sum},
		{"star", []string{"*"}, "*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := h.dataIfMatch(ifMatchRequest(c.values...))
			if err != nil || got == nil || *got != c.want {
				t.Fatalf("dataIfMatch(%q) = %v, %v; want %q", c.values, deref(got), err, c.want)
			}
		})
	}
	if got, err := h.dataIfMatch(ifMatchRequest()); err != nil || got != nil {
		t.Fatalf("dataIfMatch without the field = %v, %v", deref(got), err)
	}
	for _, v := range []string{"not-a-hash", `"` + sum, `*, "` + sum + `"`} {
		if _, err := h.dataIfMatch(ifMatchRequest(v)); !domain.IsKind(err, domain.KindBadRequest) {
			t.Errorf("dataIfMatch(%q) = %v, want a bad request", v, err)
		}
	}
}

// TestProfileIfMatch: a well-formed tag that is not the profile's version
// cannot match and is the version 0, which Update answers 412.
func TestProfileIfMatch(t *testing.T) {
	t.Parallel()
	h := &ProfileHandlers{}
	for _, c := range []struct {
		name   string
		values []string
		want   int
	}{
		{"another tag", []string{`"0000"`}, 0},
		{"not a number", []string{`"abc"`}, 0},
		{"leading zero", []string{`"03"`}, 0},
		{"zero", []string{`"0"`}, 0},
		{"weak version", []string{`W/"3"`}, 0},
		{"the version", []string{`"3"`}, 3},
		{"bare version", []string{"3"}, 3},
		{"one version among tags that cannot match", []string{`W/"2", "x"`, `"3"`}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := h.ifMatch(ifMatchRequest(c.values...))
			if err != nil || got == nil || *got != c.want {
				t.Fatalf("ifMatch(%q) = %v, %v; want %d", c.values, deref(got), err, c.want)
			}
		})
	}
	for _, values := range [][]string{nil, {"*"}} {
		if got, err := h.ifMatch(ifMatchRequest(values...)); err != nil || got != nil {
			t.Errorf("ifMatch(%q) = %v, %v; want no condition", values, deref(got), err)
		}
	}
	for _, v := range []string{"abc", "-1", `"3`, `W/3`, `*, "3"`} {
		if _, err := h.ifMatch(ifMatchRequest(v)); !domain.IsKind(err, domain.KindBadRequest) {
			t.Errorf("ifMatch(%q) = %v, want a bad request", v, err)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
