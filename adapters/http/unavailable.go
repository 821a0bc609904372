package httpapi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// dependencyUnavailable reports whether err says that a dependency (the
// database, Redis) is down, unreachable or too slow rather than that the
// server has a bug: such a failure answers 503 and the client may retry.
// The transport knows no driver, so it reads what drivers share: network
// errors, the context's deadline, database/sql's connection errors, and the
// SQLSTATE of a server error.
func dependencyUnavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	var server interface{ SQLState() string }
	if errors.As(err, &server) {
		return unavailableSQLState(server.SQLState())
	}
	return false
}

// unavailableSQLState is true for the SQLSTATE classes of a server that
// cannot serve now: 08 connection exception, 53 insufficient resources (too
// many connections, out of memory or disk), 57 operator intervention
// (statement timeout, shutdown, starting up).
func unavailableSQLState(state string) bool {
	for _, class := range []string{"08", "53", "57"} {
		if strings.HasPrefix(state, class) {
			return true
		}
	}
	return false
}
