package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/domain"
)

// transportKind names failures that only the transport can detect, so the
// domain has no kind for them.
type transportKind int

const (
	kindPayloadTooLarge transportKind = iota + 1
	kindUnsupportedMediaType
	kindMethodNotAllowed
)

// transportError is returned by decodeJSON and the router for the failures
// of transportKind.
type transportError struct {
	kind    transportKind
	message string
	err     error
}

func (e *transportError) Error() string {
	if e.err != nil {
		return e.message + ": " + e.err.Error()
	}
	return e.message
}

func (e *transportError) Unwrap() error { return e.err }

type errorClass struct {
	status int
	code   string
	// message answers when the error carries none of its own.
	message string
}

// classOf is the one table that decides which status and code a failure
// answers with. kind is a domain.Kind or a transportKind; the types differ,
// so the cases cannot collide. A kind without a case reaches the explicit
// fallback at the end, never a zero class (status 0) as a missing map key
// would; TestEveryKindHasAClass keeps that fallback for KindInternal alone.
func classOf(kind any) errorClass {
	switch kind {
	case domain.KindBadRequest:
		return errorClass{http.StatusBadRequest, "bad_request", "bad request"}
	case domain.KindUnauthorized:
		return errorClass{http.StatusUnauthorized, "unauthorized", "authentication required"}
	case domain.KindForbidden:
		return errorClass{http.StatusForbidden, "forbidden", "your role does not allow this action"}
	case domain.KindNotFound:
		return errorClass{http.StatusNotFound, "not_found", "not found"}
	case kindMethodNotAllowed:
		return errorClass{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed"}
	case domain.KindConflict:
		return errorClass{http.StatusConflict, "conflict", "conflict"}
	case domain.KindPreconditionFailed:
		return errorClass{http.StatusPreconditionFailed, "precondition_failed", "precondition failed"}
	case kindPayloadTooLarge:
		return errorClass{http.StatusRequestEntityTooLarge, "payload_too_large", "request body too large"}
	case kindUnsupportedMediaType:
		return errorClass{http.StatusUnsupportedMediaType, "unsupported_media_type", "request body must be application/json"}
	case domain.KindValidation:
		return errorClass{http.StatusUnprocessableEntity, "validation_failed", "validation failed"}
	case domain.KindRateLimited:
		return errorClass{http.StatusTooManyRequests, "rate_limited", "too many requests"}
	case domain.KindUnavailable:
		return unavailableClass
	}
	// domain.KindInternal, and a kind no case names: the failure is the
	// server's, and whatever text it carries is for the log.
	return internalClass
}

var internalClass = errorClass{http.StatusInternalServerError, "internal", "internal error"}

var unavailableClass = errorClass{http.StatusServiceUnavailable, "unavailable", "a service this request needs is unavailable; retry later"}

// unavailableRetryAfter is what a 503 tells clients to wait: long enough not
// to hammer a recovering dependency, short enough to notice its recovery.
const unavailableRetryAfter = 2 * time.Second

type errorDetail struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

type errorBody struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details []errorDetail `json:"details,omitempty"`
}

type errorEnvelope struct {
	Success bool      `json:"success"`
	Error   errorBody `json:"error"`
}

type successEnvelope struct {
	Success bool `json:"success"`
	Data    any  `json:"data"`
}

type listMeta struct {
	NextCursor *string `json:"nextCursor"`
	Limit      int     `json:"limit"`
}

type listEnvelope struct {
	Success bool     `json:"success"`
	Data    any      `json:"data"`
	Meta    listMeta `json:"meta"`
}

// resolved is a failure after classOf has been consulted.
type resolved struct {
	class      errorClass
	message    string
	details    []errorDetail
	retryAfter time.Duration
}

func resolve(err error) resolved {
	var te *transportError
	if errors.As(err, &te) {
		return withClass(classOf(te.kind), te.message)
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindInternal {
		if dependencyUnavailable(err) {
			return resolved{class: unavailableClass, message: unavailableClass.message, retryAfter: unavailableRetryAfter}
		}
		return resolved{class: internalClass, message: internalClass.message}
	}
	class := classOf(de.Kind)
	if class.status == http.StatusInternalServerError {
		// An internal *domain.Error may still carry text meant for the log only.
		return resolved{class: internalClass, message: internalClass.message}
	}
	out := withClass(class, de.Message)
	for _, f := range de.Fields {
		out.details = append(out.details, errorDetail{Field: f.Field, Issue: f.Issue})
	}
	out.retryAfter = de.RetryAfter
	if de.Kind == domain.KindUnavailable && out.retryAfter == 0 {
		out.retryAfter = unavailableRetryAfter
	}
	return out
}

func withClass(c errorClass, message string) resolved {
	if message == "" {
		message = c.message
	}
	return resolved{class: c, message: message}
}

// retryAfterSeconds rounds up, so a client that waits exactly as told is not
// refused again, and never answers 0, which would invite an immediate retry.
func retryAfterSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}

// writeError answers with the status, code and envelope that err maps to. A
// 500 says only "internal error"; the error itself goes to the log with the
// request id.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	res := resolve(err)
	if res.class.status == http.StatusInternalServerError {
		RequestLogger(r.Context()).Error("request failed",
			zap.Error(err),
			zap.String("method", r.Method),
			zap.String("path", r.URL.Path),
		)
	}
	if res.class.status == http.StatusTooManyRequests {
		// Who was throttled where, and for how long; the login and
		// registration throttles count a client address (or an email)
		// and have no actor.
		a := actorFrom(r.Context())
		RequestLogger(r.Context()).Warn("request throttled",
			zap.String("team_id", a.TeamID), zap.String("user_id", a.UserID), zap.String("api_key_id", a.APIKeyID),
			zap.String("client", ClientAddr(r)), zap.String("method", r.Method), zap.String("path", r.URL.Path),
			zap.String("reason", res.message), zap.Int("retry_after_s", retryAfterSeconds(res.retryAfter)),
		)
	}
	switch res.class.status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(res.retryAfter)))
	case http.StatusUnauthorized:
		// RFC 9110 requires a challenge on every 401.
		w.Header().Set("WWW-Authenticate", `Bearer realm="profilesvc"`)
	}
	writeErrorEnvelope(w, res.class.status, res.class.code, res.message, res.details)
}

// writeErrorEnvelope writes an error without consulting classOf or the
// log; callers that already logged (panic recovery) use it directly.
func writeErrorEnvelope(w http.ResponseWriter, status int, code, message string, details []errorDetail) {
	WriteBody(w, status, errorEnvelope{Error: errorBody{Code: code, Message: message, Details: details}})
}

// writeJSON answers with the success envelope around data.
func writeJSON(w http.ResponseWriter, status int, data any) {
	WriteBody(w, status, successEnvelope{Success: true, Data: data})
}

// writeCredentials answers like writeJSON for a response that carries
// credentials (tokens, a new API key): no cache on the way, nor the
// client's, may keep it.
func writeCredentials(w http.ResponseWriter, status int, data any) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, data)
}

// writeList answers 200 with a page of items; a nil slice is sent as [] so
// that clients can always iterate data, and an empty cursor (the last page)
// as null.
func writeList(w http.ResponseWriter, data any, nextCursor string, limit int) {
	if v := reflect.ValueOf(data); !v.IsValid() || (v.Kind() == reflect.Slice && v.IsNil()) {
		data = []struct{}{}
	}
	meta := listMeta{Limit: limit}
	if nextCursor != "" {
		meta.NextCursor = &nextCursor
	}
	WriteBody(w, http.StatusOK, listEnvelope{Success: true, Data: data, Meta: meta})
}

// writeNoContent answers 204 with no body.
func writeNoContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}

// WriteBody writes v as a JSON body with status. It encodes before writing
// the status, so a value that cannot be encoded becomes a clean 500 rather
// than a 200 with half a body. Exported for the adapters mounted in this
// router (the CDP relay's /json/version) that answer outside the envelope.
func WriteBody(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		responseLogger(w).Error("response not encodable", zap.Error(err))
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(errorEnvelope{Error: errorBody{Code: internalClass.code, Message: internalClass.message}})
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
