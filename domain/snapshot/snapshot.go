// Package snapshot owns the time machine's snapshots: a profile's settings,
// cookies and browser data as they were at one moment, kept by reference to
// the content (never a copy), so that a restore can put them back.
package snapshot

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// MaxLabelRunes bounds a snapshot's label.
const MaxLabelRunes = 200

// Kind says who took a snapshot.
type Kind string

// Kinds of snapshot.
const (
	// KindManual is a snapshot a client asked for.
	KindManual Kind = "manual"
	// KindAuto is the snapshot a restore takes of the state it replaces, so
	// that the restore can be undone.
	KindAuto Kind = "auto"
)

// Settings are the profile settings a snapshot keeps.
type Settings struct {
	Name        string
	TemplateID  string
	Browser     string
	Fingerprint profile.Fingerprint
	// ProxyID is the proxy the profile used ("" for none); Proxy is how it
	// looked then, shown with the snapshot.
	ProxyID string
	Proxy   *profile.ProxyRef
	Tags    []string
	Notes   string
}

// Snapshot is one saved state of a profile.
type Snapshot struct {
	ID        string
	TeamID    string
	ProfileID string
	Label     string
	Kind      Kind
	Settings  Settings
	// Data and Cookies refer to the blobs the profile referred to; nil for
	// none.
	Data      *profile.Content
	Cookies   *profile.Content
	CreatedBy string
	CreatedAt time.Time
}

// Take captures p's current settings and content. The label is trimmed and
// checked.
func Take(id, createdBy string, p profile.Profile, label string, kind Kind, now time.Time) (Snapshot, error) {
	label = strings.TrimSpace(label)
	if utf8.RuneCountInString(label) > MaxLabelRunes || domain.UnsafeText(label) {
		return Snapshot{}, domain.Invalid("label", "must be at most 200 characters without control or bidirectional formatting characters")
	}
	s := Snapshot{
		ID: id, TeamID: p.TeamID, ProfileID: p.ID, Label: label, Kind: kind,
		Settings: Settings{
			Name: p.Name, TemplateID: p.TemplateID, Browser: p.Browser, Fingerprint: p.Fingerprint.Clone(),
			ProxyID: p.ProxyID, Tags: slices.Clone(p.Tags), Notes: p.Notes,
		},
		CreatedBy: createdBy, CreatedAt: now.UTC(),
	}
	if p.Proxy != nil {
		ref := *p.Proxy
		s.Settings.Proxy = &ref
	}
	if p.Data != nil {
		c := p.Data.Content
		s.Data = &c
	}
	if p.Cookies != nil {
		c := *p.Cookies
		s.Cookies = &c
	}
	return s, nil
}

// Blobs lists the blobs the snapshot refers to.
func (s Snapshot) Blobs() []string {
	var out []string
	if s.Data != nil {
		out = append(out, s.Data.SHA256)
	}
	if s.Cookies != nil {
		out = append(out, s.Cookies.SHA256)
	}
	return out
}

// RestoreOnto returns p with the snapshot's settings and content put back,
// its version raised and UpdatedAt set to now. proxyExists says whether the
// snapshot's proxy is still one of the team's: a proxy deleted since is
// left out rather than making the snapshot impossible to restore. The
// data's UpdatedAt is now: that is when the profile's data changed.
func (s Snapshot) RestoreOnto(p profile.Profile, proxyExists bool, now time.Time) profile.Profile {
	next := p
	st := s.Settings
	next.Name, next.TemplateID, next.Browser, next.Fingerprint = st.Name, st.TemplateID, st.Browser, st.Fingerprint.Clone()
	next.Tags, next.Notes = slices.Clone(st.Tags), st.Notes
	next.ProxyID = ""
	if proxyExists {
		next.ProxyID = st.ProxyID
	}
	next.Data = nil
	if s.Data != nil {
		next.Data = &profile.Data{Content: *s.Data, UpdatedAt: now.UTC()}
	}
	next.Cookies = nil
	if s.Cookies != nil {
		c := *s.Cookies
		next.Cookies = &c
	}
	next.Version = p.Version + 1
	next.UpdatedAt = now.UTC()
	return next
}
