package profile

import (
	"fmt"
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

// Clone returns fp with lists of its own.
func (fp Fingerprint) Clone() Fingerprint {
	fp.Fonts = slices.Clone(fp.Fonts)
	fp.Navigator.Languages = slices.Clone(fp.Navigator.Languages)
	return fp
}

// Summary is what a list of profiles shows of fp: its user agent,
// platform, locale, time zone and screen size. The rest, the device, is
// zero: read one profile for it.
func (fp Fingerprint) Summary() Fingerprint {
	return Fingerprint{
		UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
		Screen: Screen{Width: fp.Screen.Width, Height: fp.Screen.Height},
	}
}

// FingerprintPatch overrides some fields of a fingerprint; nil fields keep
// the value they override, and nested patches merge field by field.
type FingerprintPatch struct {
	UserAgent    *string
	Platform     *string
	Locale       *string
	Timezone     *string
	Screen       *ScreenPatch
	Navigator    *NavigatorPatch
	ClientHints  *ClientHintsPatch
	Window       *WindowPatch
	WebGL        *WebGLPatch
	Fonts        *[]string
	MediaDevices *MediaDevicesPatch
	WebRTC       *string
	NoiseSeed    *string
}

// ScreenPatch overrides fields of a Screen.
type ScreenPatch struct {
	Width, Height, AvailWidth, AvailHeight, ColorDepth *int
	PixelRatio                                         *float64
}

// NavigatorPatch overrides fields of a Navigator.
type NavigatorPatch struct {
	HardwareConcurrency *int
	DeviceMemory        *float64
	MaxTouchPoints      *int
	Languages           *[]string
}

// ClientHintsPatch overrides fields of ClientHints.
type ClientHintsPatch struct {
	Platform, PlatformVersion, Architecture, Bitness, Model *string
	Mobile                                                  *bool
}

// WindowPatch overrides fields of a Window.
type WindowPatch struct{ ChromeWidth, ChromeHeight *int }

// WebGLPatch overrides fields of WebGL. The pairs are slices, so that one
// of another length is refused rather than cut or padded.
type WebGLPatch struct {
	Vendor, Renderer                                                      *string
	MaxTextureSize, MaxRenderbufferSize                                   *int
	MaxViewportDims                                                       *[]int
	MaxVertexAttribs, MaxVertexUniformVectors, MaxFragmentUniformVectors  *int
	MaxVaryingVectors, MaxCombinedTextureImageUnits, MaxTextureImageUnits *int
	MaxVertexTextureImageUnits, MaxCubeMapTextureSize                     *int
	AliasedLineWidthRange, AliasedPointSizeRange                          *[]float64
}

// MediaDevicesPatch overrides fields of MediaDevices.
type MediaDevicesPatch struct{ AudioInputs, VideoInputs, AudioOutputs *int }

// Platforms are the navigator.platform values a browser reports.
var Platforms = []string{"Win32", "MacIntel", "Linux x86_64", "Linux aarch64", "Linux armv81", "Linux armv8l", "iPhone", "iPad"}

// Values of the fields that take one of a few.
var (
	// DeviceMemories are what navigator.deviceMemory rounds memory to.
	DeviceMemories = []float64{0.25, 0.5, 1, 2, 4, 8}
	// ColorDepths are screen.colorDepth: 24 bits, 30 on wide-gamut
	// displays, 48 on a few HDR ones.
	ColorDepths         = []int{24, 30, 48}
	ClientHintPlatforms = []string{"Windows", "macOS", "Linux", "Android", "Chrome OS"}
	Architectures       = []string{"x86", "arm", ""}
	Bitnesses           = []string{"64", "32", ""}
	WebRTCPolicies      = []string{WebRTCProxyOnly, WebRTCDisabled}
)

// Bounds of a fingerprint's fields.
const (
	// Screens from small phones to 8K displays.
	minScreenWidth, maxScreenWidth   = 320, 7680
	minScreenHeight, maxScreenHeight = 320, 4320
	minPixelRatio, maxPixelRatio     = 0.5, 5
	MaxHardwareConcurrency           = 128
	MaxTouchPoints                   = 10
	MaxLanguages                     = 10
	MaxChromeWidth, MaxChromeHeight  = 200, 300
	MaxFonts, MaxFontRunes           = 300, 64
	MaxMediaDevices                  = 16
	MaxUserAgentRunes                = 512
	MaxModelRunes                    = 64
	MaxWebGLVendorRunes              = 128
	MaxWebGLRendererRunes            = 256
	// maxWebGLRange bounds the ends of the line width and point size
	// ranges.
	maxWebGLRange = 8192
)

// locale is a BCP 47 tag of the shape browsers report: language, optional
// script and region ("en", "en-US", "zh-Hant-TW", "es-419").
var locale = regexp.MustCompile(`^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?$`)

// platformVersion is a client hint's version: up to three numbers.
var platformVersion = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,6}){0,2}$`)

// noiseSeed is a seed as Generate makes them.
var noiseSeed = regexp.MustCompile(`^[0-9a-f]{16}$`)

// webglLimits are the integer limits of WebGL with their JSON names and
// bounds, which span what real GPUs report (WebGL's minimums up).
var webglLimits = []struct {
	name     string
	min, max int
	field    func(*WebGL) *int
	patch    func(*WebGLPatch) *int
}{
	{"maxTextureSize", 64, 65536, func(w *WebGL) *int { return &w.MaxTextureSize }, func(p *WebGLPatch) *int { return p.MaxTextureSize }},
	{"maxRenderbufferSize", 64, 65536, func(w *WebGL) *int { return &w.MaxRenderbufferSize }, func(p *WebGLPatch) *int { return p.MaxRenderbufferSize }},
	{"maxVertexAttribs", 8, 64, func(w *WebGL) *int { return &w.MaxVertexAttribs }, func(p *WebGLPatch) *int { return p.MaxVertexAttribs }},
	{"maxVertexUniformVectors", 128, 16384, func(w *WebGL) *int { return &w.MaxVertexUniformVectors }, func(p *WebGLPatch) *int { return p.MaxVertexUniformVectors }},
	{"maxFragmentUniformVectors", 16, 16384, func(w *WebGL) *int { return &w.MaxFragmentUniformVectors }, func(p *WebGLPatch) *int { return p.MaxFragmentUniformVectors }},
	{"maxVaryingVectors", 8, 64, func(w *WebGL) *int { return &w.MaxVaryingVectors }, func(p *WebGLPatch) *int { return p.MaxVaryingVectors }},
	{"maxCombinedTextureImageUnits", 8, 256, func(w *WebGL) *int { return &w.MaxCombinedTextureImageUnits }, func(p *WebGLPatch) *int { return p.MaxCombinedTextureImageUnits }},
	{"maxTextureImageUnits", 8, 64, func(w *WebGL) *int { return &w.MaxTextureImageUnits }, func(p *WebGLPatch) *int { return p.MaxTextureImageUnits }},
	{"maxVertexTextureImageUnits", 0, 64, func(w *WebGL) *int { return &w.MaxVertexTextureImageUnits }, func(p *WebGLPatch) *int { return p.MaxVertexTextureImageUnits }},
	{"maxCubeMapTextureSize", 16, 65536, func(w *WebGL) *int { return &w.MaxCubeMapTextureSize }, func(p *WebGLPatch) *int { return p.MaxCubeMapTextureSize }},
}

// maxViewportDim bounds each of MaxViewportDims.
const minViewportDim, maxViewportDim = 64, 65536

// applyTo returns fp with the patch's fields. A new screen size without a
// new available size keeps the bars it had (taskbar, dock); a new locale
// without new languages takes the languages of that locale. A pair of
// another length than two is recorded as invalid.
func (p FingerprintPatch) applyTo(v *domain.Validation, fp Fingerprint) Fingerprint {
	fp = fp.Clone()
	set(&fp.UserAgent, p.UserAgent)
	if p.UserAgent != nil {
		fp.UserAgent = strings.TrimSpace(fp.UserAgent)
	}
	set(&fp.Platform, p.Platform)
	if p.Locale != nil && *p.Locale != fp.Locale {
		fp.Locale = *p.Locale
		fp.Navigator.Languages = LanguagesFor(fp.Locale)
	}
	set(&fp.Timezone, p.Timezone)
	if s := p.Screen; s != nil {
		if s.Width != nil || s.Height != nil {
			w, h := fp.Screen.Width, fp.Screen.Height
			set(&w, s.Width)
			set(&h, s.Height)
			fp.Screen = fp.Screen.resized(w, h)
		}
		set(&fp.Screen.AvailWidth, s.AvailWidth)
		set(&fp.Screen.AvailHeight, s.AvailHeight)
		set(&fp.Screen.ColorDepth, s.ColorDepth)
		set(&fp.Screen.PixelRatio, s.PixelRatio)
	}
	if n := p.Navigator; n != nil {
		set(&fp.Navigator.HardwareConcurrency, n.HardwareConcurrency)
		set(&fp.Navigator.DeviceMemory, n.DeviceMemory)
		set(&fp.Navigator.MaxTouchPoints, n.MaxTouchPoints)
		switch {
		case n.Languages == nil:
		case len(*n.Languages) > MaxLanguages:
			v.Add("fingerprint.navigator.languages", "must list 1 to 10 BCP 47 tags")
		default:
			fp.Navigator.Languages = dedupe(*n.Languages)
		}
	}
	if c := p.ClientHints; c != nil {
		set(&fp.ClientHints.Platform, c.Platform)
		set(&fp.ClientHints.PlatformVersion, c.PlatformVersion)
		set(&fp.ClientHints.Architecture, c.Architecture)
		set(&fp.ClientHints.Bitness, c.Bitness)
		set(&fp.ClientHints.Model, c.Model)
		set(&fp.ClientHints.Mobile, c.Mobile)
	}
	if w := p.Window; w != nil {
		set(&fp.Window.ChromeWidth, w.ChromeWidth)
		set(&fp.Window.ChromeHeight, w.ChromeHeight)
	}
	if g := p.WebGL; g != nil {
		set(&fp.WebGL.Vendor, g.Vendor)
		set(&fp.WebGL.Renderer, g.Renderer)
		for _, l := range webglLimits {
			set(l.field(&fp.WebGL), l.patch(g))
		}
		setPair(v, "fingerprint.webgl.maxViewportDims", &fp.WebGL.MaxViewportDims, g.MaxViewportDims)
		setPair(v, "fingerprint.webgl.aliasedLineWidthRange", &fp.WebGL.AliasedLineWidthRange, g.AliasedLineWidthRange)
		setPair(v, "fingerprint.webgl.aliasedPointSizeRange", &fp.WebGL.AliasedPointSizeRange, g.AliasedPointSizeRange)
	}
	// Long lists are refused on their length, before any work in
	// proportion to it (duplicates do not make them shorter).
	switch {
	case p.Fonts == nil:
	case len(*p.Fonts) > MaxFonts:
		v.Add("fingerprint.fonts", "must list at most 300 families")
	default:
		fonts := make([]string, len(*p.Fonts))
		for i, f := range *p.Fonts {
			fonts[i] = strings.TrimSpace(f)
		}
		fp.Fonts = dedupe(fonts)
	}
	if m := p.MediaDevices; m != nil {
		set(&fp.MediaDevices.AudioInputs, m.AudioInputs)
		set(&fp.MediaDevices.VideoInputs, m.VideoInputs)
		set(&fp.MediaDevices.AudioOutputs, m.AudioOutputs)
	}
	set(&fp.WebRTC, p.WebRTC)
	set(&fp.NoiseSeed, p.NoiseSeed)
	return fp
}

// set stores *from in dst when from is not nil.
func set[T any](dst *T, from *T) {
	if from != nil {
		*dst = *from
	}
}

// setPair stores a pair sent as a list, recording one of another length.
func setPair[T any](v *domain.Validation, field string, dst *[2]T, from *[]T) {
	if from == nil {
		return
	}
	if len(*from) != 2 {
		v.Add(field, "must be a pair [low, high]")
		return
	}
	*dst = [2]T{(*from)[0], (*from)[1]}
}

// dedupe drops repeated entries, keeping the first of each.
func dedupe(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Validate checks every field of the fingerprint and the rules between
// them; the error names each invalid field as the API does
// ("fingerprint.navigator.hardwareConcurrency").
func (fp Fingerprint) Validate() error {
	v := &domain.Validation{}
	fp.check(v)
	return v.Err()
}

func (fp Fingerprint) check(v *domain.Validation) {
	if fp.UserAgent == "" || utf8.RuneCountInString(fp.UserAgent) > MaxUserAgentRunes || domain.UnsafeText(fp.UserAgent) {
		v.Add("fingerprint.userAgent", "must be 1 to 512 characters without control or bidirectional formatting characters")
	}
	if !slices.Contains(Platforms, fp.Platform) {
		v.Add("fingerprint.platform", "must be one of "+strings.Join(Platforms, ", "))
	}
	if fp.Locale != Auto && !locale.MatchString(fp.Locale) {
		v.Add("fingerprint.locale", `must be a BCP 47 tag such as en-US, or "auto"`)
	}
	if fp.Timezone != Auto && !validTimezone(fp.Timezone) {
		v.Add("fingerprint.timezone", `must be an IANA time zone such as Europe/Berlin, or "auto"`)
	}
	fp.Screen.check(v)
	fp.checkNavigator(v)
	fp.ClientHints.check(v)
	inRange(v, "fingerprint.window.chromeWidth", fp.Window.ChromeWidth, 0, MaxChromeWidth)
	inRange(v, "fingerprint.window.chromeHeight", fp.Window.ChromeHeight, 0, MaxChromeHeight)
	fp.WebGL.check(v)
	checkFonts(v, fp.Fonts)
	inRange(v, "fingerprint.mediaDevices.audioInputs", fp.MediaDevices.AudioInputs, 0, MaxMediaDevices)
	inRange(v, "fingerprint.mediaDevices.videoInputs", fp.MediaDevices.VideoInputs, 0, MaxMediaDevices)
	inRange(v, "fingerprint.mediaDevices.audioOutputs", fp.MediaDevices.AudioOutputs, 0, MaxMediaDevices)
	if !slices.Contains(WebRTCPolicies, fp.WebRTC) {
		v.Add("fingerprint.webrtc", "must be one of "+strings.Join(WebRTCPolicies, ", "))
	}
	if !noiseSeed.MatchString(fp.NoiseSeed) {
		v.Add("fingerprint.noiseSeed", "must be 16 lowercase hexadecimal digits")
	}
}

// inRange records field when n is outside [lo, hi].
func inRange(v *domain.Validation, field string, n, lo, hi int) {
	if n < lo || n > hi {
		v.Add(field, fmt.Sprintf("must be from %d to %d", lo, hi))
	}
}

func (s Screen) check(v *domain.Validation) {
	inRange(v, "fingerprint.screen.width", s.Width, minScreenWidth, maxScreenWidth)
	inRange(v, "fingerprint.screen.height", s.Height, minScreenHeight, maxScreenHeight)
	if s.AvailWidth < 1 || s.AvailWidth > s.Width {
		v.Add("fingerprint.screen.availWidth", "must be from 1 to the screen's width")
	}
	if s.AvailHeight < 1 || s.AvailHeight > s.Height {
		v.Add("fingerprint.screen.availHeight", "must be from 1 to the screen's height")
	}
	if !slices.Contains(ColorDepths, s.ColorDepth) {
		v.Add("fingerprint.screen.colorDepth", "must be 24, 30 or 48")
	}
	if !(s.PixelRatio >= minPixelRatio && s.PixelRatio <= maxPixelRatio) { // NaN too
		v.Add("fingerprint.screen.pixelRatio", "must be from 0.5 to 5")
	}
}

func (fp Fingerprint) checkNavigator(v *domain.Validation) {
	n := fp.Navigator
	inRange(v, "fingerprint.navigator.hardwareConcurrency", n.HardwareConcurrency, 1, MaxHardwareConcurrency)
	if !slices.Contains(DeviceMemories, n.DeviceMemory) {
		v.Add("fingerprint.navigator.deviceMemory", "must be one of 0.25, 0.5, 1, 2, 4, 8")
	}
	inRange(v, "fingerprint.navigator.maxTouchPoints", n.MaxTouchPoints, 0, MaxTouchPoints)
	const field = "fingerprint.navigator.languages"
	switch {
	case fp.Locale != Auto && !locale.MatchString(fp.Locale):
		// The locale's own error says what to fix first.
	case fp.Locale == Auto:
		if len(n.Languages) > 0 {
			v.Add(field, `must be empty while the locale is "auto": they follow the proxy's country at launch`)
		}
	case len(n.Languages) == 0 || len(n.Languages) > MaxLanguages:
		v.Add(field, "must list 1 to 10 BCP 47 tags")
	case n.Languages[0] != fp.Locale:
		v.Add(field, "must start with the locale")
	default:
		for _, l := range n.Languages {
			if !locale.MatchString(l) {
				v.Add(field, "must list BCP 47 tags such as en-US")
				break
			}
		}
	}
}

func (c ClientHints) check(v *domain.Validation) {
	if !slices.Contains(ClientHintPlatforms, c.Platform) {
		v.Add("fingerprint.clientHints.platform", "must be one of "+strings.Join(ClientHintPlatforms, ", "))
	}
	if c.PlatformVersion != "" && !platformVersion.MatchString(c.PlatformVersion) {
		v.Add("fingerprint.clientHints.platformVersion", `must be empty or up to three numbers such as "15.0.0"`)
	}
	if !slices.Contains(Architectures, c.Architecture) {
		v.Add("fingerprint.clientHints.architecture", `must be "x86", "arm" or ""`)
	}
	if !slices.Contains(Bitnesses, c.Bitness) {
		v.Add("fingerprint.clientHints.bitness", `must be "64", "32" or ""`)
	}
	if utf8.RuneCountInString(c.Model) > MaxModelRunes || domain.UnsafeText(c.Model) {
		v.Add("fingerprint.clientHints.model", "must be at most 64 characters without control or bidirectional formatting characters")
	}
}

func (w WebGL) check(v *domain.Validation) {
	if w.Vendor == "" || utf8.RuneCountInString(w.Vendor) > MaxWebGLVendorRunes || domain.UnsafeText(w.Vendor) {
		v.Add("fingerprint.webgl.vendor", "must be 1 to 128 characters without control or bidirectional formatting characters")
	}
	if w.Renderer == "" || utf8.RuneCountInString(w.Renderer) > MaxWebGLRendererRunes || domain.UnsafeText(w.Renderer) {
		v.Add("fingerprint.webgl.renderer", "must be 1 to 256 characters without control or bidirectional formatting characters")
	}
	for _, l := range webglLimits {
		inRange(v, "fingerprint.webgl."+l.name, *l.field(&w), l.min, l.max)
	}
	if d := w.MaxViewportDims; d[0] < minViewportDim || d[0] > maxViewportDim || d[1] < minViewportDim || d[1] > maxViewportDim {
		v.Add("fingerprint.webgl.maxViewportDims", "must be two numbers from 64 to 65536")
	}
	for _, r := range []struct {
		field string
		r     [2]float64
	}{{"aliasedLineWidthRange", w.AliasedLineWidthRange}, {"aliasedPointSizeRange", w.AliasedPointSizeRange}} {
		if !(r.r[0] > 0 && r.r[0] <= r.r[1] && r.r[1] <= maxWebGLRange) {
			v.Add("fingerprint.webgl."+r.field, "must be [low, high] with 0 < low <= high <= 8192")
		}
	}
}

func checkFonts(v *domain.Validation, fonts []string) {
	if len(fonts) > MaxFonts {
		v.Add("fingerprint.fonts", "must list at most 300 families")
		return
	}
	for _, f := range fonts {
		if f == "" || utf8.RuneCountInString(f) > MaxFontRunes || domain.UnsafeText(f) {
			v.Add("fingerprint.fonts", "each family must be 1 to 64 characters without control or bidirectional formatting characters")
			return
		}
	}
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
