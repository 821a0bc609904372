package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

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

// decodeJSON reads the request body into dst (a pointer to a DTO) and
// returns an error for writeError: 415 for another content type, 413 over
// 1 MiB, 400 for malformed, empty or trailing data, 422 for an unknown,
// read-only or mistyped field and for what checkStrictJSON refuses (a name
// given twice or in another case, invalid UTF-8, NUL). Only fields the DTO
// declares can be set, which is what prevents mass assignment.
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
	if err := checkStrictJSON(trimmed, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, dst)
	}
	if _, err := dec.Token(); err != io.EOF {
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

func decodeError(err error, dst any) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &domain.Error{Kind: domain.KindBadRequest, Message: fmt.Sprintf("malformed JSON at byte %d", syn.Offset), Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &domain.Error{Kind: domain.KindBadRequest, Message: "malformed JSON: body ends too early", Err: err}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &domain.Error{Kind: domain.KindBadRequest, Message: "request body must be a JSON " + jsonTypeName(typ.Type), Err: err}
		}
		return domain.Invalid(typ.Field, "must be "+article(jsonTypeName(typ.Type)))
	}
	if name, ok := unknownField(err); ok {
		if isReadOnly(name, dst) {
			return domain.Invalid(name, "is read-only")
		}
		return domain.Invalid(name, "is not allowed")
	}
	var inv *json.InvalidUnmarshalError
	var de *domain.Error
	switch {
	case errors.As(err, &inv):
		// A DTO the decoder cannot fill is a bug here, not in the request.
		return fmt.Errorf("decode request body: %w", err)
	case errors.As(err, &de):
		// A DTO's own UnmarshalJSON already said what is wrong.
		return err
	}
	// The rest come from UnmarshalJSON methods (time.Time and the like)
	// refusing a value the client sent.
	return &domain.Error{Kind: domain.KindBadRequest, Message: "request body holds a value that cannot be read", Err: err}
}

// unknownField extracts the name from encoding/json's DisallowUnknownFields
// error, which has no type of its own.
func unknownField(err error) (string, bool) {
	const prefix = "json: unknown field "
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	name, uerr := strconv.Unquote(strings.TrimPrefix(msg, prefix))
	if uerr != nil {
		return "", false
	}
	return name, true
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
