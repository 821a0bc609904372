package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies a failure so that every transport can map it to its own
// status without parsing messages.
type Kind int

// The kinds a use case may return. Anything that is not a *Error is an
// internal failure.
const (
	KindInternal Kind = iota
	KindBadRequest
	KindUnauthorized
	KindForbidden
	KindNotFound
	KindConflict
	KindPreconditionFailed
	KindValidation
	KindRateLimited
	// KindUnavailable is a dependency (database, Redis) that is down or did
	// not answer in time: the request may succeed if retried later.
	KindUnavailable
)

// FieldIssue names one field of the input and what is wrong with it.
type FieldIssue struct {
	Field string
	Issue string
}

// Error is the one error type of the domain. Message is written for people;
// Fields list every invalid field for KindValidation; RetryAfter is set for
// KindRateLimited.
type Error struct {
	Kind       Kind
	Message    string
	Fields     []FieldIssue
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Issue)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the first *Error in err's chain, or KindInternal.
func KindOf(err error) Kind {
	var de *Error
	if errors.As(err, &de) {
		return de.Kind
	}
	return KindInternal
}

// IsKind reports whether err carries the given kind.
func IsKind(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// NotFound reports that the named resource does not exist in the caller's scope.
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Message: what + " not found"}
}

// Conflict reports a state conflict.
func Conflict(msg string) *Error { return &Error{Kind: KindConflict, Message: msg} }

// Forbidden reports that the actor's role does not allow the action.
func Forbidden(msg string) *Error { return &Error{Kind: KindForbidden, Message: msg} }

// Unauthorized reports missing, bad, expired or revoked credentials.
func Unauthorized(msg string) *Error { return &Error{Kind: KindUnauthorized, Message: msg} }

// BadRequest reports input that cannot be read at all.
func BadRequest(msg string) *Error { return &Error{Kind: KindBadRequest, Message: msg} }

// PreconditionFailed reports a version mismatch.
func PreconditionFailed(msg string) *Error {
	return &Error{Kind: KindPreconditionFailed, Message: msg}
}

// RateLimited reports that the caller must wait before trying again.
func RateLimited(msg string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindRateLimited, Message: msg, RetryAfter: retryAfter}
}

// Unavailable reports that a dependency is down or too slow; the caller may
// retry later.
func Unavailable(msg string) *Error { return &Error{Kind: KindUnavailable, Message: msg} }

// Invalid reports one invalid field.
func Invalid(field, issue string) *Error {
	return &Error{Kind: KindValidation, Message: "validation failed", Fields: []FieldIssue{{Field: field, Issue: issue}}}
}

// Validation collects field issues; Err returns nil when there are none.
type Validation struct{ fields []FieldIssue }

// Add records one invalid field.
func (v *Validation) Add(field, issue string) { v.fields = append(v.fields, FieldIssue{field, issue}) }

// Err returns a KindValidation error naming every recorded field, or nil.
func (v *Validation) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return &Error{Kind: KindValidation, Message: "validation failed", Fields: v.fields}
}
