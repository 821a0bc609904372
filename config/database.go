package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// DatabaseKind names the store DATABASE_URL selects.
type DatabaseKind string

// The stores DATABASE_URL can select.
const (
	DatabaseMemory   DatabaseKind = "memory"
	DatabaseSQLite   DatabaseKind = "sqlite"
	DatabasePostgres DatabaseKind = "postgres"
)

// Database is DATABASE_URL, read once: which store, and where it keeps its
// data.
type Database struct {
	Kind DatabaseKind
	// Path is the SQLite database file, or ":memory:".
	Path string
	// URL is the PostgreSQL URL as given: pgx reads it, and sends query
	// parameters it does not know (search_path, say) to the server.
	URL string
}

// String describes the database with its password masked, so that a
// configuration can be logged.
func (d Database) String() string {
	switch d.Kind {
	case DatabaseSQLite:
		return "sqlite://" + d.Path
	case DatabasePostgres:
		if u, err := url.Parse(d.URL); err == nil {
			return u.Redacted()
		}
		return "postgres://(unparsable)"
	}
	return string(d.Kind) + "://"
}

// ParseDatabaseURL reads a DATABASE_URL as Load does, for code that opens a
// store without the rest of the configuration (tests of the stores). Its
// error is an *Error naming DATABASE_URL.
func ParseDatabaseURL(raw string) (Database, error) {
	d, problem := parseDatabase(raw)
	if problem != "" {
		return Database{}, &Error{Variable: "DATABASE_URL", Problem: problem}
	}
	return d, nil
}

// postgresSSLModes are the sslmode values pgx accepts.
var postgresSSLModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// parseDatabase returns the database of raw, or why raw is unusable. The
// problem never repeats raw, which may hold a password.
func parseDatabase(raw string) (Database, string) {
	const want = "want sqlite://<path>, postgres://user:pass@host:5432/db or memory://"
	scheme, rest, found := strings.Cut(raw, "://")
	if !found || !isScheme(scheme) {
		return Database{}, "is not a URL: " + want
	}
	switch strings.ToLower(scheme) {
	case "memory":
		if rest != "" {
			return Database{}, "memory:// takes nothing after the scheme"
		}
		return Database{Kind: DatabaseMemory}, ""
	case "sqlite":
		switch {
		case rest == "":
			return Database{}, "sqlite:// needs a file path, such as sqlite://./data/profilesvc.db"
		case strings.ContainsAny(rest, "?#"):
			// The path becomes part of a file: URI, where these begin the
			// query and the fragment.
			return Database{}, fmt.Sprintf("SQLite path %q contains ? or #", rest)
		}
		return Database{Kind: DatabaseSQLite, Path: rest}, ""
	case "postgres", "postgresql":
		u, err := url.Parse(raw)
		if err != nil {
			// err quotes raw, password included.
			return Database{}, "is not a URL (percent-encode special characters in the user name and password)"
		}
		if u.Hostname() == "" {
			return Database{}, "postgres:// needs a host, such as postgres://user:pass@host:5432/db"
		}
		if p := u.Port(); p != "" && !isPort(p) {
			return Database{}, fmt.Sprintf("port %q is not a number from 1 to 65535", p)
		}
		if m := u.Query().Get("sslmode"); m != "" && !slices.Contains(postgresSSLModes, m) {
			return Database{}, fmt.Sprintf("sslmode %q is not one of %s", m, strings.Join(postgresSSLModes, ", "))
		}
		return Database{Kind: DatabasePostgres, URL: raw}, ""
	}
	return Database{}, fmt.Sprintf("scheme %q is not sqlite, postgres or memory", scheme)
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, "+", "-" or "."), so that it can be quoted in a message:
// text that is not a scheme could be a password.
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535
}
