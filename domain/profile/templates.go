package profile

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// Template is a kind of device: an operating system, the browser the user
// agent names, and the locale and time zone of a country. A profile made
// from it gets a device of that kind (Generate); the template's own
// representative device is Device.
type Template struct {
	ID      string
	Name    string
	Browser string // the engine: BrowserChromium
	OS      string // OSWindows, OSMacOS, OSLinux or OSAndroid
	// Brand is the browser the user agent names: BrandChrome or BrandEdge.
	Brand    string
	Locale   string
	Timezone string
}

// BrowserChromium is the engine every built-in template runs on.
const BrowserChromium = "chromium"

// Operating systems of templates.
const (
	OSWindows = "windows"
	OSMacOS   = "macos"
	OSLinux   = "linux"
	OSAndroid = "android"
)

// Browsers a user agent names.
const (
	BrandChrome = "chrome"
	BrandEdge   = "edge"
)

// templates is the catalogue, in the order GET /api/v1/templates lists it.
var templates = []Template{
	{ID: "tpl_chrome_win_us", Name: "Chrome on Windows (US)", Browser: BrowserChromium,
		OS: OSWindows, Brand: BrandChrome, Locale: "en-US", Timezone: "America/New_York"},
	{ID: "tpl_chrome_win_de", Name: "Chrome on Windows (Germany)", Browser: BrowserChromium,
		OS: OSWindows, Brand: BrandChrome, Locale: "de-DE", Timezone: "Europe/Berlin"},
	{ID: "tpl_edge_win_gb", Name: "Edge on Windows (UK)", Browser: BrowserChromium,
		OS: OSWindows, Brand: BrandEdge, Locale: "en-GB", Timezone: "Europe/London"},
	{ID: "tpl_chrome_mac_us", Name: "Chrome on macOS (US)", Browser: BrowserChromium,
		OS: OSMacOS, Brand: BrandChrome, Locale: "en-US", Timezone: "America/Los_Angeles"},
	{ID: "tpl_chrome_mac_fr", Name: "Chrome on macOS (France)", Browser: BrowserChromium,
		OS: OSMacOS, Brand: BrandChrome, Locale: "fr-FR", Timezone: "Europe/Paris"},
	{ID: "tpl_chrome_linux_us", Name: "Chrome on Linux (US)", Browser: BrowserChromium,
		OS: OSLinux, Brand: BrandChrome, Locale: "en-US", Timezone: "America/Chicago"},
	{ID: "tpl_chrome_linux_br", Name: "Chrome on Linux (Brazil)", Browser: BrowserChromium,
		OS: OSLinux, Brand: BrandChrome, Locale: "pt-BR", Timezone: "America/Sao_Paulo"},
	{ID: "tpl_chrome_android_us", Name: "Chrome on Android (US)", Browser: BrowserChromium,
		OS: OSAndroid, Brand: BrandChrome, Locale: "en-US", Timezone: "America/Denver"},
	{ID: "tpl_chrome_android_jp", Name: "Chrome on Android (Japan)", Browser: BrowserChromium,
		OS: OSAndroid, Brand: BrandChrome, Locale: "ja-JP", Timezone: "Asia/Tokyo"},
	{ID: "tpl_chrome_win_in", Name: "Chrome on Windows (India)", Browser: BrowserChromium,
		OS: OSWindows, Brand: BrandChrome, Locale: "en-IN", Timezone: "Asia/Kolkata"},
}

// Templates returns the catalogue; the caller may change the copy.
func Templates() []Template {
	out := make([]Template, len(templates))
	copy(out, templates)
	return out
}

// TemplateByID finds a template of the catalogue.
func TemplateByID(id string) (Template, bool) {
	for _, t := range templates {
		if t.ID == id {
			return t, true
		}
	}
	return Template{}, false
}

// Device is the template's representative device on an engine of
// engineVersion ("" for DefaultEngineVersion): generated from a source
// seeded by the template's id, so that every instance and every call shows
// the same one.
func (t Template) Device(engineVersion string) Fingerprint {
	return Generate(t, engineVersion, seededRand("template", t.ID))
}

// Fingerprint is the template's representative device on
// DefaultEngineVersion.
func (t Template) Fingerprint() Fingerprint { return t.Device("") }

// seededRand is a random source that depends on purpose and id alone: the
// same on every instance and in every release (PCG's output is fixed, and
// the generator reads only Uint64 from it).
func seededRand(purpose, id string) *rand.Rand {
	sum := sha256.Sum256([]byte(purpose + "\x00" + id))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}
