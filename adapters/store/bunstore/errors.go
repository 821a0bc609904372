package bunstore

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/profilesvc/profilesvc/domain"
)

// readErr maps a failed read: a missing row is "what not found", anything
// else an internal error.
func readErr(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound(what)
	}
	return fmt.Errorf("bunstore: read %s: %w", what, err)
}

// writeErr maps a failed write: a unique-key clash is a conflict with the
// given message, anything else an internal error.
func writeErr(err error, what, conflict string) error {
	if isUniqueViolation(err) {
		return domain.Conflict(conflict)
	}
	return fmt.Errorf("bunstore: write %s: %w", what, err)
}

// touchedOne maps the outcome of an UPDATE or DELETE of one row by key: no
// row touched means that the row does not exist.
func touchedOne(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("bunstore: write %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("bunstore: write %s: %w", what, err)
	}
	if n == 0 {
		return domain.NotFound(what)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" // unique_violation
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code()
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// utc returns t in UTC: drivers hand back times in the session's or a fixed
// zone, and every store must return the same values.
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr is utc for optional times.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
