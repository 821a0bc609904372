// Package profile owns browser profiles: their settings, the fingerprint
// they present, the built-in fingerprint templates, and the exclusive
// session (lease) under which one profile runs at most once.
package profile

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

// Limits of a profile's settings.
const (
	MaxNameRunes  = 200
	MaxNotesRunes = 10_000
	MaxTags       = 20
	MaxTagRunes   = 50
)

// Status is what a profile is doing; it follows from its session.
type Status string

// Profile states.
const (
	StatusIdle    Status = "idle"
	StatusRunning Status = "running"
)

// ParseStatus reads a status filter value.
func ParseStatus(s string) (Status, bool) {
	switch Status(s) {
	case StatusIdle, StatusRunning:
		return Status(s), true
	}
	return "", false
}

// Profile is one browser identity of a team.
type Profile struct {
	ID          string
	TeamID      string
	Name        string
	TemplateID  string
	Browser     string
	Fingerprint Fingerprint
	// ProxyID names a stored proxy of the team, or is empty for none.
	ProxyID string
	// Proxy is how the proxy is shown with the profile: filled from the
	// proxies module when the profile is read, never stored with it.
	Proxy   *ProxyRef
	Tags    []string
	Notes   string
	Session *Session
	// Data is the profile's browser-data archive; nil until one is stored.
	Data *Data
	// Cookies are the profile's cookies, kept as a blob of their own; nil
	// while the profile has none.
	Cookies   *Content
	Version   int
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Content is a blob that a profile or a snapshot refers to: its sha256 (the
// address in the blob store) and size.
type Content struct {
	SHA256 string
	Size   int64
}

// Data is a profile's stored browser-data archive.
type Data struct {
	Content
	UpdatedAt time.Time
}

// Blobs lists the blobs the profile refers to.
func (p Profile) Blobs() []string {
	var out []string
	if p.Data != nil {
		out = append(out, p.Data.SHA256)
	}
	if p.Cookies != nil {
		out = append(out, p.Cookies.SHA256)
	}
	return out
}

// ProxyRef is a profile's proxy as the profile shows it.
type ProxyRef struct {
	ID   string
	Type string
	Host string
	Port int
}

// Status is running while the profile holds a session.
func (p Profile) Status() Status {
	if p.Session != nil {
		return StatusRunning
	}
	return StatusIdle
}

// Session is the exclusive lease under which a profile runs. It ends when
// released or when ExpiresAt passes without a heartbeat.
type Session struct {
	ID         string
	StartedAt  time.Time
	ExpiresAt  time.Time
	LaunchedBy string // user id
	Headless   bool
	// CDPURL is where clients reach the session's browser over the Chrome
	// DevTools Protocol, through the service's relay, without its token;
	// empty when the client runs the browser itself.
	CDPURL string
	// CDPTokenHash is the sha256 (hex) of the secret token the relay
	// requires; the token itself is shown once, in the launch's answer.
	CDPTokenHash string
	// Node is the address (NODE_URL) of the instance that runs the browser,
	// where other instances relay its clients.
	Node string
}

// Expired reports whether the lease has run out at now.
func (s Session) Expired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// StopReason says why a session ended.
type StopReason string

// Reasons a session ends.
const (
	StopReleased StopReason = "released"
	StopExpired  StopReason = "expired"
	// StopFailed ends a session whose browser could not be started.
	StopFailed StopReason = "failed"
	// StopClosed: the client closed the browser.
	StopClosed StopReason = "closed"
	// StopCrashed: the browser died.
	StopCrashed StopReason = "crashed"
	// StopShutdown: the instance running the browser shut down.
	StopShutdown StopReason = "shutdown"
)

// Settings are what a client sets on create; every field is validated.
type Settings struct {
	Name        string
	TemplateID  string
	Fingerprint FingerprintPatch
	ProxyID     string
	// InlineProxy, when set, is a new proxy to store with the profile in
	// place of ProxyID.
	InlineProxy *proxy.Input
	Tags        []string
	Notes       string
}

// Devices makes the device of a profile made from a template: Generate
// with a random source of its own, for a new device each time.
type Devices func(Template) Fingerprint

// New builds a profile from settings: the fingerprint is a new device of
// the template's kind, with the validated overrides.
func New(id, teamID, createdBy string, s Settings, devices Devices, now time.Time) (Profile, error) {
	v := &domain.Validation{}
	name := checkName(v, s.Name)
	tpl, ok := TemplateByID(s.TemplateID)
	if !ok {
		v.Add("templateId", "must name a template from GET /api/v1/templates")
	}
	tags := checkTags(v, s.Tags)
	checkNotes(v, s.Notes)
	var fp Fingerprint
	if ok {
		fp = s.Fingerprint.applyTo(v, devices(tpl))
		fp.check(v)
	}
	if err := v.Err(); err != nil {
		return Profile{}, err
	}
	now = now.UTC()
	return Profile{
		ID: id, TeamID: teamID, Name: name, TemplateID: tpl.ID, Browser: tpl.Browser,
		Fingerprint: fp, ProxyID: s.ProxyID, Tags: tags, Notes: s.Notes,
		Version: 1, CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now,
	}, nil
}

// Patch is a partial update: nil fields stay as they are.
type Patch struct {
	Name       *string
	TemplateID *string
	// Fingerprint overrides fields of the fingerprint; with TemplateID, it
	// applies on top of the new device of the new template's kind.
	Fingerprint *FingerprintPatch
	// ProxyID: nil keeps the proxy, "" removes it.
	ProxyID *string
	// InlineProxy, when set, is a new proxy to store and assign.
	InlineProxy *proxy.Input
	Tags        *[]string
	Notes       *string
}

// Empty reports whether the patch changes nothing.
func (p Patch) Empty() bool {
	return p.Name == nil && p.TemplateID == nil && p.Fingerprint == nil && p.ProxyID == nil && p.InlineProxy == nil && p.Tags == nil && p.Notes == nil
}

// Apply returns the profile with the patch applied, its version raised and
// UpdatedAt set to now. A new template gives the profile a new device of
// its kind, from devices.
func (p Profile) Apply(patch Patch, devices Devices, now time.Time) (Profile, error) {
	v := &domain.Validation{}
	next := p
	if patch.Name != nil {
		next.Name = checkName(v, *patch.Name)
	}
	if patch.TemplateID != nil {
		tpl, ok := TemplateByID(*patch.TemplateID)
		if !ok {
			v.Add("templateId", "must name a template from GET /api/v1/templates")
		} else if tpl.ID != p.TemplateID {
			next.TemplateID, next.Browser, next.Fingerprint = tpl.ID, tpl.Browser, devices(tpl)
		}
	}
	if patch.Fingerprint != nil {
		next.Fingerprint = patch.Fingerprint.applyTo(v, next.Fingerprint)
		next.Fingerprint.check(v)
	}
	if patch.ProxyID != nil {
		next.ProxyID = *patch.ProxyID
	}
	if patch.Tags != nil {
		next.Tags = checkTags(v, *patch.Tags)
	}
	if patch.Notes != nil {
		checkNotes(v, *patch.Notes)
		next.Notes = *patch.Notes
	}
	if err := v.Err(); err != nil {
		return Profile{}, err
	}
	next.Version = p.Version + 1
	next.UpdatedAt = now.UTC()
	return next, nil
}

func checkName(v *domain.Validation, name string) string {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxNameRunes || domain.UnsafeText(name) {
		v.Add("name", "must be 1 to 200 characters without control or bidirectional formatting characters")
	}
	return name
}

func checkNotes(v *domain.Validation, notes string) {
	if utf8.RuneCountInString(notes) > MaxNotesRunes {
		v.Add("notes", "must be at most 10000 characters")
	}
}

// checkTags trims the tags, drops duplicates (keeping first-seen order) and
// validates each. The count is checked first, on the tags as sent: a request
// with a huge list is refused before any work in proportion to it.
func checkTags(v *domain.Validation, tags []string) []string {
	if len(tags) > MaxTags {
		v.Add("tags", "at most 20 tags")
		return nil
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || utf8.RuneCountInString(t) > MaxTagRunes || domain.UnsafeText(t) {
			v.Add("tags", "each tag must be 1 to 50 characters without control or bidirectional formatting characters")
			return nil
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// ErrRunning is the conflict of acting on a profile that holds a live
// session; callers name the holder in their message.
var ErrRunning = domain.Conflict("profile is running")

// ErrNotRunning is the conflict of releasing an idle profile.
var ErrNotRunning = domain.Conflict("profile is not running")

// ErrSessionEnded is the conflict of extending a session that is over.
var ErrSessionEnded = domain.Conflict("the session has ended; launch the profile again")

// Launch starts a session for userID at now, lasting ttl. A live session is
// ErrRunning; one whose lease has run out is ended and returned as ended, so
// the caller can report it stopped.
func (p Profile) Launch(sessionID, userID string, headless bool, ttl time.Duration, now time.Time) (next Profile, ended *Session, err error) {
	if p.Session != nil {
		if !p.Session.Expired(now) {
			return Profile{}, nil, ErrRunning
		}
		ended = p.Session
	}
	now = now.UTC()
	p.Session = &Session{ID: sessionID, StartedAt: now, ExpiresAt: now.Add(ttl), LaunchedBy: userID, Headless: headless}
	return p, ended, nil
}

// Heartbeat extends the live session sessionID to now plus ttl.
func (p Profile) Heartbeat(sessionID string, ttl time.Duration, now time.Time) (Profile, error) {
	if p.Session == nil || p.Session.ID != sessionID || p.Session.Expired(now) {
		return Profile{}, ErrSessionEnded
	}
	s := *p.Session
	s.ExpiresAt = now.UTC().Add(ttl)
	p.Session = &s
	return p, nil
}

// Release ends the session and returns it.
func (p Profile) Release() (Profile, Session, error) {
	if p.Session == nil {
		return Profile{}, Session{}, ErrNotRunning
	}
	s := *p.Session
	p.Session = nil
	return p, s, nil
}

// CheckDeletable refuses to delete a profile that holds a session.
func (p Profile) CheckDeletable() error {
	if p.Session != nil {
		return ErrRunning
	}
	return nil
}
