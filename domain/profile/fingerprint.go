package profile

import (
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // zone names are checked against the embedded database
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// Screen is the screen size a profile reports, in CSS pixels.
type Screen struct {
	Width  int
	Height int
}

// Fingerprint is what a profile's browser presents to the sites it visits.
type Fingerprint struct {
	UserAgent string
	Platform  string
	Locale    string
	Timezone  string
	Screen    Screen
}

// FingerprintPatch overrides some fields of a fingerprint; nil fields keep
// the value they override.
type FingerprintPatch struct {
	UserAgent *string
	Platform  *string
	Locale    *string
	Timezone  *string
	Screen    *Screen
}

// Platforms are the navigator.platform values a browser reports.
var Platforms = []string{"Win32", "MacIntel", "Linux x86_64", "Linux aarch64", "Linux armv81", "Linux armv8l", "iPhone", "iPad"}

// Screen bounds: from small phones to 8K displays.
const (
	minScreenWidth, maxScreenWidth   = 320, 7680
	minScreenHeight, maxScreenHeight = 320, 4320
)

// locale is a BCP 47 tag of the shape browsers report: language, optional
// script and region ("en", "en-US", "zh-Hant-TW", "es-419").
var locale = regexp.MustCompile(`^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?$`)

// applyTo returns fp with the patch's fields, recording each invalid one.
func (p FingerprintPatch) applyTo(v *domain.Validation, fp Fingerprint) Fingerprint {
	if p.UserAgent != nil {
		ua := strings.TrimSpace(*p.UserAgent)
		if ua == "" || utf8.RuneCountInString(ua) > 512 || domain.UnsafeText(ua) {
			v.Add("fingerprint.userAgent", "must be 1 to 512 characters without control or bidirectional formatting characters")
		}
		fp.UserAgent = ua
	}
	if p.Platform != nil {
		if !slices.Contains(Platforms, *p.Platform) {
			v.Add("fingerprint.platform", "must be one of "+strings.Join(Platforms, ", "))
		}
		fp.Platform = *p.Platform
	}
	if p.Locale != nil {
		if *p.Locale != Auto && !locale.MatchString(*p.Locale) {
			v.Add("fingerprint.locale", `must be a BCP 47 tag such as en-US, or "auto"`)
		}
		fp.Locale = *p.Locale
	}
	if p.Timezone != nil {
		if *p.Timezone != Auto && !validTimezone(*p.Timezone) {
			v.Add("fingerprint.timezone", `must be an IANA time zone such as Europe/Berlin, or "auto"`)
		}
		fp.Timezone = *p.Timezone
	}
	if p.Screen != nil {
		s := *p.Screen
		if s.Width < minScreenWidth || s.Width > maxScreenWidth {
			v.Add("fingerprint.screen.width", "must be from 320 to 7680")
		}
		if s.Height < minScreenHeight || s.Height > maxScreenHeight {
			v.Add("fingerprint.screen.height", "must be from 320 to 4320")
		}
		fp.Screen = s
	}
	return fp
}

// validTimezone accepts IANA zone names ("Area/Location") and UTC. The
// zone database is the one compiled into the binary (time/tzdata), so the
// answer does not depend on the host.
func validTimezone(name string) bool {
	if name == "UTC" {
		return true
	}
	if !strings.Contains(name, "/") || strings.HasPrefix(name, "/") || strings.Contains(name, "..") || len(name) > 64 {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}
