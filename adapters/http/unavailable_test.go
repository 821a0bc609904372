package httpapi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
)

// sqlStateError stands for a driver's server error (pgconn.PgError), which
// the transport reads through its SQLState method alone.
type sqlStateError string

func (e sqlStateError) Error() string    { return "server error " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// timeoutError is a net.Error that timed out, as a dial or read deadline
// returns.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestDependencyFailuresAnswer503WithRetryAfter(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	cases := map[string]error{
		"connection refused":    refused,
		"connection reset":      &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}},
		"network timeout":       &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}},
		"context deadline":      fmt.Errorf("query: %w", context.DeadlineExceeded),
		"bad connection":        driver.ErrBadConn,
		"connection done":       sql.ErrConnDone,
		"statement timeout":     sqlStateError("57014"),
		"server shutting down":  sqlStateError("57P01"),
		"cannot connect now":    sqlStateError("57P03"),
		"connection exception":  sqlStateError("08006"),
		"too many connections":  sqlStateError("53300"),
		"marked unavailable":    domain.Unavailable("the database does not answer"),
		"unavailable, internal": &domain.Error{Kind: domain.KindInternal, Err: refused},
	}
	for name, cause := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), fmt.Errorf("use case: %w", cause))
			expectError(t, w, http.StatusServiceUnavailable, "unavailable")
			if got := w.Header().Get("Retry-After"); got != "2" {
				t.Fatalf("Retry-After = %q, want 2", got)
			}
		})
	}
}

func TestBugsStayInternal(t *testing.T) {
	t.Parallel()
	cases := map[string]error{
		"plain error":       errors.New("nil map"),
		"syntax error":      sqlStateError("42601"),
		"unique violation":  sqlStateError("23505"),
		"client went away":  context.Canceled,
		"unexpected EOF ok": fmt.Errorf("decode: %w", errors.New("unexpected end")),
	}
	for name, cause := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), cause)
			expectError(t, w, http.StatusInternalServerError, "internal")
		})
	}
}

func TestADomainKindWinsOverAnUnavailableCause(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	err := &domain.Error{Kind: domain.KindNotFound, Message: "profile not found", Err: driver.ErrBadConn}
	writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), err)
	expectError(t, w, http.StatusNotFound, "not_found")
}
