package apptest

import (
	"errors"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
)

// ErrDown is what the failing doubles and wrappers of the tests answer, so
// that a test can tell their failure from any other error.
var ErrDown = errors.New("backend is down")

// WantKind fails t unless err is a domain error of kind k.
func WantKind(t testing.TB, err error, k domain.Kind) {
	t.Helper()
	if !domain.IsKind(err, k) {
		t.Fatalf("err = %v (kind %d), want kind %d", err, domain.KindOf(err), k)
	}
}

// WantDown fails t unless err is (or wraps) ErrDown.
func WantDown(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, ErrDown) {
		t.Fatalf("err = %v, want %v", err, ErrDown)
	}
}
