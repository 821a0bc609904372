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

// Screen is the display a profile reports, in CSS pixels.
type Screen struct {
	Width, Height int
	// AvailWidth and AvailHeight are what the taskbar, dock or menu bar
	// leave of the screen (screen.availWidth, screen.availHeight).
	AvailWidth, AvailHeight int
	// ColorDepth is screen.colorDepth and screen.pixelDepth: 24, or 30 on
	// wide-gamut displays such as newer Macs'.
	ColorDepth int
	// PixelRatio is window.devicePixelRatio: device pixels per CSS pixel.
	PixelRatio float64
}

// Navigator holds the navigator properties of a device beyond its user
// agent and platform.
type Navigator struct {
	HardwareConcurrency int
	// DeviceMemory is navigator.deviceMemory in GiB, which browsers round
	// to one of 0.25, 0.5, 1, 2, 4 or 8.
	DeviceMemory float64
	// MaxTouchPoints is 0 on desktops, 5 or 10 on phones.
	MaxTouchPoints int
	// Languages is navigator.languages; the first is the fingerprint's
	// locale. With an "auto" locale the runtime derives them at launch.
	Languages []string
}

// ClientHints are the User-Agent Client Hints of the device. The brands
// and the full version list come from the engine at launch.
type ClientHints struct {
	Platform        string // "Windows", "macOS", "Linux", "Android"
	PlatformVersion string // "15.0.0" (Windows 11), "10.0.0" (Windows 10), "14.6.1"
	Architecture    string // "x86", "arm" or ""
	Bitness         string // "64", "32" or ""
	Model           string // a phone's model ("Pixel 8"); "" otherwise
	Mobile          bool
}

// Window is the browser's own chrome around the page.
type Window struct {
	ChromeWidth  int // outerWidth - innerWidth
	ChromeHeight int // outerHeight - innerHeight (tabs, toolbar)
}

// WebGL is what WEBGL_debug_renderer_info and getParameter answer.
type WebGL struct {
	// Vendor and Renderer are UNMASKED_VENDOR_WEBGL and
	// UNMASKED_RENDERER_WEBGL, such as "Google Inc. (NVIDIA)" and an ANGLE
	// renderer string.
	Vendor, Renderer             string
	MaxTextureSize               int
	MaxRenderbufferSize          int
	MaxViewportDims              [2]int
	MaxVertexAttribs             int
	MaxVertexUniformVectors      int
	MaxFragmentUniformVectors    int
	MaxVaryingVectors            int
	MaxCombinedTextureImageUnits int
	MaxTextureImageUnits         int
	MaxVertexTextureImageUnits   int
	MaxCubeMapTextureSize        int
	AliasedLineWidthRange        [2]float64
	AliasedPointSizeRange        [2]float64
}

// MediaDevices counts the devices navigator.mediaDevices.enumerateDevices
// lists, by kind.
type MediaDevices struct{ AudioInputs, VideoInputs, AudioOutputs int }

// WebRTC policies: what a page's RTCPeerConnection may reveal.
const (
	// WebRTCProxyOnly lets WebRTC use only the proxied route, so the only
	// address it shows is the proxy's.
	WebRTCProxyOnly = "disable_non_proxied_udp"
	// WebRTCDisabled removes RTCPeerConnection.
	WebRTCDisabled = "disabled"
)

// Fingerprint is the device a profile's browser presents to the sites it
// visits.
type Fingerprint struct {
	UserAgent    string
	Platform     string // navigator.platform
	Locale       string // or "auto"
	Timezone     string // or "auto"
	Screen       Screen
	Navigator    Navigator
	ClientHints  ClientHints
	Window       Window
	WebGL        WebGL
	Fonts        []string // font families the device has, in its platform's names
	MediaDevices MediaDevices
	WebRTC       string // WebRTCProxyOnly or WebRTCDisabled
	// NoiseSeed is 16 lowercase hex characters; it seeds the noise of
	// canvas, WebGL readPixels, audio and client rects.
	NoiseSeed string
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
