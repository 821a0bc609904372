// Package proxy owns a team's proxies: how to reach one (type, host, port,
// credentials with the password sealed), the result of the last check made
// through it, and the rules of both.
package proxy

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// Limits of a proxy's settings.
const (
	MaxNameRunes     = 200
	MaxHostLength    = 253
	MaxUsernameBytes = 255
	MaxPasswordBytes = 255
	// MaxURLBytes bounds the short form as sent: room for its longest
	// parts, the credentials percent-encoded.
	MaxURLBytes = 2048
)

// Type is how the service speaks to a proxy.
type Type string

// The proxy types.
const (
	TypeHTTP   Type = "http"
	TypeHTTPS  Type = "https"
	TypeSOCKS5 Type = "socks5"
)

// ErrInUse is the conflict of deleting a proxy that a profile of its team
// uses: the stores refuse it with this error.
var ErrInUse = domain.Conflict("the proxy is in use by a profile; assign another proxy to it first")

// Status is what the last check said.
type Status string

// The statuses of a proxy.
const (
	StatusUnknown Status = "unknown"
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"
)

// ParseStatus reads a status filter.
func ParseStatus(s string) (Status, bool) {
	switch st := Status(s); st {
	case StatusUnknown, StatusOK, StatusFailed:
		return st, true
	}
	return "", false
}

// Check is the result of one check through a proxy.
type Check struct {
	CheckedAt time.Time
	OK        bool
	LatencyMs int64
	ExitIP    string
	Country   string
	City      string
	Timezone  string
	Error     string
}

// Proxy is a stored proxy of a team. The password is kept sealed
// (PasswordSealed, empty when there is none) and never shown.
type Proxy struct {
	ID             string
	TeamID         string
	Name           string
	Type           Type
	Host           string
	Port           int
	Username       string
	PasswordSealed []byte
	Status         Status
	LastCheck      *Check
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// HasPassword reports whether the proxy has a password.
func (p Proxy) HasPassword() bool { return len(p.PasswordSealed) > 0 }

// Spec is how to reach a proxy as a client gives it, the password in the
// clear.
type Spec struct {
	Name     string
	Type     string
	Host     string
	Port     int
	Username string
	Password string
}

// Check validates the spec, naming each bad field, and returns it
// normalised (trimmed host, lower-case type, a name from the address when
// none is given).
func (s Spec) Check() (Spec, error) {
	v := &domain.Validation{}
	s.Type = strings.ToLower(strings.TrimSpace(s.Type))
	CheckType(v, s.Type)
	s.Host = CheckHost(v, s.Host)
	CheckPort(v, s.Port)
	s.Name = strings.TrimSpace(s.Name)
	CheckName(v, s.Name)
	CheckCredentials(v, s.Username, s.Password)
	if err := v.Err(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// CheckType validates a proxy type.
func CheckType(v *domain.Validation, t string) {
	switch Type(t) {
	case TypeHTTP, TypeHTTPS, TypeSOCKS5:
	default:
		v.Add("type", "must be http, https or socks5")
	}
}

// CheckHost validates a host name or IP address (without port) and returns
// it trimmed, without the brackets of an IPv6 literal. Whether the service
// may connect to it is the prober's check, made after DNS resolution.
func CheckHost(v *domain.Validation, host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(host), "["), "]")
	if host == "" || len(host) > MaxHostLength {
		v.Add("host", "must be a host name or IP address")
		return host
	}
	if net.ParseIP(host) != nil {
		return host
	}
	for _, r := range host {
		ok := r == '-' || r == '.' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			v.Add("host", "must be a host name or IP address")
			break
		}
	}
	return host
}

// CheckPort validates a port.
func CheckPort(v *domain.Validation, port int) {
	if port < 1 || port > 65535 {
		v.Add("port", "must be from 1 to 65535")
	}
}

// CheckName validates a display name ("" lets New name the proxy after its
// address).
func CheckName(v *domain.Validation, name string) {
	if utf8.RuneCountInString(name) > MaxNameRunes || domain.UnsafeText(name) {
		v.Add("name", "must be at most 200 characters without control or bidirectional formatting characters")
	}
}

// CheckCredentials validates a username and password.
func CheckCredentials(v *domain.Validation, username, password string) {
	if len(username) > MaxUsernameBytes || domain.UnsafeText(username) {
		v.Add("username", "must be at most 255 bytes without control characters")
	}
	if len(password) > MaxPasswordBytes {
		v.Add("password", "must be at most 255 bytes")
	}
}

// ParseURL reads the short form type://user:pass@host:port into a spec,
// checked; every problem is reported on the field "url".
func ParseURL(raw string) (Spec, error) {
	bad := func(issue string) (Spec, error) { return Spec{}, domain.Invalid("url", issue) }
	if len(raw) > MaxURLBytes {
		return bad("must be at most " + strconv.Itoa(MaxURLBytes) + " bytes")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return bad("must look like socks5://user:password@host:port")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return bad("must not carry a path, query or fragment")
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return bad("must name a port from 1 to 65535")
	}
	s := Spec{Type: u.Scheme, Host: u.Hostname(), Port: port}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	s, err = s.Check()
	if err != nil {
		return bad("names an invalid proxy: " + err.Error())
	}
	return s, nil
}

// Input is a proxy as a client gives it: URL in the short form
// type://user:pass@host:port, or the fields.
type Input struct {
	URL      string
	Name     string
	Type     string
	Host     string
	Port     int
	Username string
	Password string
}

// EventView is data.proxy of the proxy events: never the credentials.
type EventView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// EventView returns data.proxy of p.
func (p Proxy) EventView() EventView {
	return EventView{ID: p.ID, Name: p.Name, Type: string(p.Type), Host: p.Host, Port: p.Port}
}

// New returns a proxy of teamID from a checked spec; sealed is the
// password as the service's secret box sealed it (nil for none).
func New(id, teamID string, s Spec, sealed []byte, now time.Time) Proxy {
	now = now.UTC()
	name := s.Name
	if name == "" {
		name = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	}
	return Proxy{ID: id, TeamID: teamID, Name: name, Type: Type(s.Type), Host: s.Host, Port: s.Port,
		Username: s.Username, PasswordSealed: sealed, Status: StatusUnknown, CreatedAt: now, UpdatedAt: now}
}

// Change is a checked partial update: nil fields stay. A new password is
// PasswordSealed; ClearPassword removes the password.
type Change struct {
	Name           *string
	Type           *Type
	Host           *string
	Port           *int
	Username       *string
	PasswordSealed []byte
	ClearPassword  bool
}

// Change returns the proxy with ch applied at now. A change of how the
// proxy is reached makes the last check stale: the status is unknown again.
func (p Proxy) Change(ch Change, now time.Time) Proxy {
	reach := ch.Type != nil || ch.Host != nil || ch.Port != nil || ch.Username != nil || ch.PasswordSealed != nil || ch.ClearPassword
	if ch.Name != nil {
		p.Name = *ch.Name
	}
	if ch.Type != nil {
		p.Type = *ch.Type
	}
	if ch.Host != nil {
		p.Host = *ch.Host
	}
	if ch.Port != nil {
		p.Port = *ch.Port
	}
	if ch.Username != nil {
		p.Username = *ch.Username
	}
	switch {
	case ch.ClearPassword:
		p.PasswordSealed = nil
	case ch.PasswordSealed != nil:
		p.PasswordSealed = ch.PasswordSealed
	}
	if reach {
		p.Status, p.LastCheck = StatusUnknown, nil
	}
	p.UpdatedAt = now.UTC()
	return p
}

// Record returns the proxy with c as its last check.
func (p Proxy) Record(c Check) Proxy {
	c.CheckedAt = c.CheckedAt.UTC()
	p.LastCheck = &c
	p.Status = StatusFailed
	if c.OK {
		p.Status = StatusOK
	}
	p.UpdatedAt = c.CheckedAt
	return p
}
