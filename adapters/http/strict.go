package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/domain"
)

// maxJSONDepth bounds how deeply a request body may nest. No request of
// this API nests beyond four levels; the bound keeps the walk below from
// recursing a megabyte of brackets deep.
const maxJSONDepth = 32

// checkStrictJSON refuses what encoding/json would accept but a careful
// client never sends, and what would reach storage as something else than
// it was sent: a name given twice (encoding/json keeps the last, so two
// parts of the stack could read different values), a name that matches a
// field of dst only when case is ignored, a string (or name) that is not
// valid UTF-8 (encoding/json silently replaces it, raw or as a lone
// surrogate escape) or that holds a NUL. Each is a 422 naming the field, as
// dotted path with array indexes (fingerprint.screen.width, tags[2]).
//
// It reads the body's bytes itself, once, ahead of the standard decoder,
// which stays the one that fills the DTOs, with its errors and the DTOs'
// own UnmarshalJSON methods unchanged. Walking json.Decoder's tokens
// instead made each value an allocation and cost as much as the decoding
// itself. A syntax error ends the walk without an error of its own: the
// decoder that runs next reports it as before.
func checkStrictJSON(body []byte, dst any) error {
	w := &jsonWalker{body: body}
	err := w.value("", reflect.TypeOf(dst), 0)
	if errors.Is(err, errMalformed) {
		return nil
	}
	return err
}

// errMalformed stops the walk on a syntax error, for decodeJSON to report.
var errMalformed = errors.New("malformed JSON")

// jsonWalker reads body from i on.
type jsonWalker struct {
	body []byte
	i    int
}

// skipSpace moves past JSON whitespace and returns the next byte, 0 at the
// end of the body.
func (w *jsonWalker) skipSpace() byte {
	for ; w.i < len(w.body); w.i++ {
		switch c := w.body[w.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// value walks one value at path, which Go type t (nil when unknown or
// decoded by a method of its own) will receive.
func (w *jsonWalker) value(path string, t reflect.Type, depth int) error {
	if depth > maxJSONDepth {
		return domain.BadRequest("request body nests deeper than " + strconv.Itoa(maxJSONDepth) + " levels")
	}
	switch c := w.skipSpace(); {
	case c == '{':
		w.i++
		return w.object(path, decodedBy(t), depth)
	case c == '[':
		w.i++
		return w.array(path, decodedBy(t), depth)
	case c == '"':
		s, raw, err := w.text()
		if err != nil {
			return err
		}
		return checkText(fieldName(path), s, raw)
	case c == '-' || c >= '0' && c <= '9':
		return w.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(w.body[w.i:], []byte(lit)) {
				w.i += len(lit)
				return nil
			}
		}
		return errMalformed
	}
}

func (w *jsonWalker) object(path string, t reflect.Type, depth int) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	if w.skipSpace() == '}' {
		w.i++
		return nil
	}
	var seen []string // a DTO's few names: a map would cost more
	for {
		if w.skipSpace() != '"' {
			return errMalformed
		}
		name, raw, err := w.text()
		if err != nil {
			return err
		}
		field := joinField(path, name)
		if err := checkText(field, name, raw); err != nil {
			return err
		}
		if slices.Contains(seen, name) {
			return domain.Invalid(field, "is given more than once")
		}
		seen = append(seen, name)
		next := elem
		if fields != nil {
			ft, exact := fields[name]
			if !exact && foldMatch(fields, name) {
				// encoding/json would fill the field of another case.
				return domain.Invalid(field, "is not allowed")
			}
			next = ft
		}
		if w.skipSpace() != ':' {
			return errMalformed
		}
		w.i++
		if err := w.value(field, next, depth+1); err != nil {
			return err
		}
		switch w.skipSpace() {
		case ',':
			w.i++
		case '}':
			w.i++
			return nil
		default:
			return errMalformed
		}
	}
}

func (w *jsonWalker) array(path string, t reflect.Type, depth int) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	if w.skipSpace() == ']' {
		w.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := w.value(path+"["+strconv.Itoa(i)+"]", elem, depth+1); err != nil {
			return err
		}
		switch w.skipSpace() {
		case ',':
			w.i++
		case ']':
			w.i++
			return nil
		default:
			return errMalformed
		}
	}
}

// text reads the string that starts at w.i and returns it as
// encoding/json decodes it, and as it was sent, quotes included. Only a
// string with escapes or invalid UTF-8 is handed to encoding/json; any
// other is its bytes.
func (w *jsonWalker) text() (string, []byte, error) {
	start := w.i
	plain := true
	for i := start + 1; i < len(w.body); i++ {
		switch c := w.body[i]; {
		case c == '"':
			w.i = i + 1
			raw := w.body[start:w.i]
			if plain && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), raw, nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", nil, errMalformed
			}
			return s, raw, nil
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", nil, errMalformed
		}
	}
	return "", nil, errMalformed
}

// number moves past the number that starts at w.i, as JSON spells one.
func (w *jsonWalker) number() error {
	b, i := w.body, w.i
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return errMalformed
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return errMalformed
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return errMalformed
		}
	}
	w.i = i
	return nil
}

// checkText refuses a decoded string s, sent as raw, that holds a NUL or
// was not valid UTF-8. encoding/json turns invalid bytes and lone surrogate
// escapes into U+FFFD; a U+FFFD that the client did not send itself, as
// such or escaped, is one of those.
func checkText(field, s string, raw []byte) error {
	if strings.IndexByte(s, 0) >= 0 {
		return domain.Invalid(field, "must not contain NUL characters")
	}
	if n := strings.Count(s, "\uFFFD"); n > 0 {
		sent := bytes.Count(raw, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
		if !utf8.Valid(raw) || n > sent {
			return domain.Invalid(field, "must be valid UTF-8")
		}
	}
	return nil
}

// fieldName names the body itself when the value is not in an object.
func fieldName(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// joinField appends an object member's name to path; a name that is not
// printable is shown escaped, so that the answer does not carry a NUL or
// invalid UTF-8 itself.
func joinField(path, name string) string {
	if !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		q := strconv.QuoteToASCII(name)
		name = q[1 : len(q)-1]
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodedBy returns the type whose JSON shape encoding/json derives from
// its fields or elements, t without its pointers, or nil when the shape is
// not known here: no type, an interface, or a type that decodes itself
// (json.RawMessage, time.Time), whose names are its own business.
func decodedBy(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
			reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Interface:
			return nil
		default:
			return t
		}
	}
	return nil
}

// fieldsByType caches jsonFields: a DTO's fields are the same on every
// request.
var fieldsByType sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names encoding/json gives the fields of struct
// t to their types, embedded structs' promoted fields included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if cached, ok := fieldsByType.Load(t); ok {
		return cached.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if _, taken := out[name]; !taken {
			out[name] = f.Type
		}
	}
	fieldsByType.Store(t, out)
	return out
}

func foldMatch(fields map[string]reflect.Type, name string) bool {
	for f := range fields {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// checkParams refuses, before any handler runs, a path variable or query
// parameter that holds a NUL or is not valid UTF-8 once percent-decoded:
// storage refuses both (PostgreSQL with an error, which was a 500) or
// stores something else than was sent. The answer is 400 naming the
// parameter.
func checkParams(next http.Handler) http.Handler {
	return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		for name, v := range mux.Vars(r) {
			if err := checkParam(name, v); err != nil {
				return err
			}
		}
		for name, vs := range r.URL.Query() {
			if err := checkParam(name, name); err != nil {
				return err
			}
			for _, v := range vs {
				if err := checkParam(name, v); err != nil {
					return err
				}
			}
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

func checkParam(name, v string) error {
	var issue string
	switch {
	case strings.IndexByte(v, 0) >= 0:
		issue = "must not contain NUL characters"
	case !utf8.ValidString(v):
		issue = "must be valid UTF-8"
	default:
		return nil
	}
	field := joinField("", name)
	return &domain.Error{Kind: domain.KindBadRequest, Message: "parameter " + field + " " + issue, Fields: []domain.FieldIssue{{Field: field, Issue: issue}}}
}
