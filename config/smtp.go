package config

import (
	"fmt"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
)

// SMTP is SMTP_URL, read once: the server that mail goes to and how to talk
// to it.
type SMTP struct {
	Host string
	Port int
	// Username is empty when the server takes mail without authentication.
	Username string
	Password string
	// ImplicitTLS is set by smtps://: TLS from the first byte (port 465 by
	// default). smtp:// connects in plain text and upgrades with STARTTLS
	// when the server offers it (port 25 by default).
	ImplicitTLS bool
	// From is the sender address: the URL's from parameter, or
	// profilesvc@<host>.
	From string
}

// String describes the server with its password masked, so that a
// configuration can be logged.
func (s SMTP) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port))}
	if s.ImplicitTLS {
		u.Scheme = "smtps"
	}
	if s.Username != "" {
		u.User = url.UserPassword(s.Username, s.Password)
	}
	return u.Redacted()
}

// parseSMTP returns the server of raw, or why raw is unusable. The problem
// never repeats raw, which may hold a password.
func parseSMTP(raw string) (SMTP, string) {
	u, err := url.Parse(raw)
	if err != nil {
		// err quotes raw, password included.
		return SMTP{}, "is not a URL (percent-encode special characters in the user name and password)"
	}
	s := SMTP{Host: u.Hostname(), Port: 25}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.ImplicitTLS, s.Port = true, 465
	default:
		if !isScheme(u.Scheme) {
			return SMTP{}, "is not a URL such as smtp://user:pass@host:587"
		}
		return SMTP{}, fmt.Sprintf("scheme %q is not smtp or smtps", u.Scheme)
	}
	if s.Host == "" {
		return SMTP{}, "has no host: want smtp://user:pass@host:port or smtps://user:pass@host:port"
	}
	if p := u.Port(); p != "" {
		if !isPort(p) {
			return SMTP{}, fmt.Sprintf("port %q is not a number from 1 to 65535", p)
		}
		s.Port, _ = strconv.Atoi(p)
	}
	if u.Path != "" && u.Path != "/" {
		return SMTP{}, fmt.Sprintf("path %q means nothing to SMTP", u.Path)
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	if s.Username == "" && s.Password != "" {
		return SMTP{}, "has a password but no user name"
	}
	s.From = "profilesvc@" + s.Host
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q[k]
		if k != "from" {
			return SMTP{}, fmt.Sprintf("parameter %q is unknown: only from=<address> is read", k)
		}
		a, err := mail.ParseAddress(v[0])
		if err != nil || len(v) > 1 {
			return SMTP{}, fmt.Sprintf("from=%q is not one email address", v[0])
		}
		s.From = a.Address
	}
	return s, ""
}
