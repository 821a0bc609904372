package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/profilesvc/profilesvc/domain"
)

// alwaysReadOnly are names the server assigns on every resource; a client
// that sends one is told it cannot set it rather than that it does not exist.
var alwaysReadOnly = []string{"id", "createdAt", "updatedAt", "teamId", "status", "version", "userId"}

// readOnlyFielder lets a request DTO name further fields of its resource
// that clients may read but not write.
type readOnlyFielder interface {
	readOnlyFields() []string
}

// requestJSON are the rules every request body is read by: json/v2's own,
// which refuse a name given twice (encoding/json kept the last, so two parts
// of the stack could read different values), match names in their exact
// case only and refuse text that is not valid UTF-8 (encoding/json replaced
// it, raw or as a lone surrogate escape, with U+FFFD); and these: a member
// the DTO does not declare is refused, which is what prevents mass
// assignment, and so is a string that holds a NUL, which storage refuses
// (PostgreSQL with an error) or stores as something else than was sent.
var requestJSON = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.WithUnmarshalers(json.UnmarshalFromFunc(readText)),
)

var errNUL = errors.New("must not contain NUL characters")

// readText reads a JSON string into a Go string, refusing one with a NUL;
// anything else is left to the decoder's own rules.
func readText(dec *jsontext.Decoder, s *string) error {
	if dec.PeekKind() != '"' {
		return json.SkipFunc
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	text := tok.String()
	if strings.IndexByte(text, 0) >= 0 {
		return errNUL
	}
	*s = text
	return nil
}

// decodeJSON reads the request body into dst (a pointer to a DTO) by
// requestJSON and returns an error for writeError: 415 for another content
// type, 413 over 1 MiB, 400 for malformed, empty or trailing data, 422
// naming the field for an unknown, read-only or mistyped field, a name given
// twice or in another case, invalid UTF-8 and NUL.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	return decodeJSONUpTo(w, r, dst, maxBodyBytes)
}

// decodeJSONUpTo is decodeJSON with another size limit.
func decodeJSONUpTo(w http.ResponseWriter, r *http.Request, dst any, limit int64) error {
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	// The whole body is read before parsing, so a body over the limit is 413
	// whatever its content, not 400 when the oversize part is malformed.
	body, err := readBodyUpTo(w, r, limit)
	if err != nil {
		return err
	}
	// JSON white space only: space, tab, line feed, carriage return. A
	// body that starts with another space character (\v, U+00A0) is not
	// JSON.
	trimmed := bytes.Trim(body, " \t\n\r")
	if len(trimmed) == 0 {
		return domain.BadRequest("request body is empty; send a JSON object")
	}
	if bytes.Equal(trimmed, []byte("null")) {
		return domain.BadRequest("request body must not be null")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(trimmed), requestJSON)
	if err := json.UnmarshalDecode(dec, dst); err != nil {
		return decodeError(err, trimmed, dst)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return domain.BadRequest("request body must hold exactly one JSON value")
	}
	return nil
}

// decodeOptionalJSON is decodeJSON for actions whose body may be left out:
// a request without a body leaves dst as it is.
func decodeOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	return decodeJSON(w, r, dst)
}

func checkJSONContentType(header string) error {
	if header == "" {
		return &transportError{kind: kindUnsupportedMediaType, message: "Content-Type must be application/json"}
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return &transportError{kind: kindUnsupportedMediaType, message: "Content-Type must be application/json"}
	}
	// JSON is UTF-8 (RFC 8259); a body declared in another charset would be
	// read wrongly, so it is refused rather than guessed at.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return &transportError{kind: kindUnsupportedMediaType, message: "JSON bodies must be UTF-8"}
	}
	return nil
}

func decodeError(err error, body []byte, dst any) error {
	var de *domain.Error
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &de):
		// A DTO's own UnmarshalJSON already said what is wrong.
		return de
	case errors.As(err, &syn) && syn.Err == jsontext.ErrDuplicateName:
		return domain.Invalid(fieldPath("", body, syn.JSONPointer, true), "is given more than once")
	case errors.As(err, &syn) && notUTF8(body, syn.ByteOffset):
		return domain.Invalid(fieldPath("", body, syn.JSONPointer, true), "must be valid UTF-8")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &domain.Error{Kind: domain.KindBadRequest, Message: "malformed JSON: body ends too early", Err: err}
	case errors.As(err, &syn):
		return &domain.Error{Kind: domain.KindBadRequest, Message: fmt.Sprintf("malformed JSON at byte %d", syn.ByteOffset), Err: err}
	case !errors.As(err, &sem):
		// A DTO the decoder cannot fill is a bug here, not in the request.
		return fmt.Errorf("decode request body: %w", err)
	case errors.Is(sem.Err, errNUL):
		return domain.Invalid(fieldPath("", body, sem.JSONPointer, true), errNUL.Error())
	case errors.Is(sem.Err, json.ErrUnknownName):
		field := fieldPath("", body, sem.JSONPointer, true)
		if sem.JSONPointer.Parent() == "" && isReadOnly(sem.JSONPointer.LastToken(), dst) {
			return domain.Invalid(field, "is read-only")
		}
		return domain.Invalid(field, "is not allowed")
	case sem.GoType == nil:
		return &domain.Error{Kind: domain.KindBadRequest, Message: "request body holds a value that cannot be read", Err: err}
	case sem.JSONPointer == "":
		return &domain.Error{Kind: domain.KindBadRequest, Message: "request body must be a JSON " + jsonTypeName(sem.GoType), Err: err}
	}
	// A value of another type, or a number out of its field's range. The
	// field is named as encoding/json named it, without array indexes (tags
	// for tags[1]).
	return domain.Invalid(fieldPath("", body, sem.JSONPointer, false), "must be "+article(jsonTypeName(sem.GoType)))
}

// notUTF8 reports whether the syntax error at body[offset:] is text that is
// not valid UTF-8: a byte that starts no character, or the escape of a lone
// surrogate (json/v2 reports both where they start).
func notUTF8(body []byte, offset int64) bool {
	if offset < 0 || offset >= int64(len(body)) {
		return false
	}
	rest := body[offset:]
	if r, _ := utf8.DecodeRune(rest); r == utf8.RuneError {
		return true
	}
	if len(rest) < 6 || rest[0] != '\\' || rest[1] != 'u' {
		return false
	}
	n, err := strconv.ParseUint(string(rest[2:6]), 16, 16)
	return err == nil && utf16.IsSurrogate(rune(n))
}

// fieldPath names the value at ptr in body as the API's errors do, after
// prefix: member names joined by dots, array elements as [i]
// (fingerprint.screen.width, tags[2], [0].name), or without them unless
// indexes; "body" for the body itself. Whether a token of ptr is a name or
// an index only the body tells: it is read again up to ptr.
func fieldPath(prefix string, body []byte, ptr jsontext.Pointer, indexes bool) string {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for dec.StackPointer() != ptr {
		if _, err := dec.ReadToken(); err != nil {
			break
		}
	}
	path, level := prefix, 0
	for tok := range ptr.Tokens() {
		level++
		if level <= dec.StackDepth() {
			if kind, _ := dec.StackIndex(level); kind == '[' {
				if indexes {
					path += "[" + tok + "]"
				}
				continue
			}
		}
		path = joinField(path, tok)
	}
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

func isReadOnly(name string, dst any) bool {
	if slices.Contains(alwaysReadOnly, name) {
		return true
	}
	if ro, ok := dst.(readOnlyFielder); ok {
		return slices.Contains(ro.readOnlyFields(), name)
	}
	return false
}

// jsonTypeName says which JSON type a Go type accepts, in the client's terms.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "value"
}

func article(typeName string) string {
	switch typeName[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + typeName
	}
	return "a " + typeName
}
