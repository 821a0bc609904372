package profilecache

import (
	"encoding/json"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// entry is a profile as Redis keeps it, in JSON. Its names are the cache's
// own, not the domain's: renaming a field of the domain leaves the entries
// readable. The parts that have only plain fields have those of the
// domain's, in their order, so that each converts to the other: a field
// added to the domain does not compile here until the entry keeps it.
type entry struct {
	ID          string           `json:"id"`
	TeamID      string           `json:"teamId"`
	Name        string           `json:"name"`
	TemplateID  string           `json:"templateId"`
	Browser     string           `json:"browser"`
	Fingerprint entryFingerprint `json:"fingerprint"`
	ProxyID     string           `json:"proxyId"`
	Proxy       *entryProxy      `json:"proxy"`
	Tags        []string         `json:"tags"`
	Notes       string           `json:"notes"`
	Session     *entrySession    `json:"session"`
	Data        *entryData       `json:"data"`
	Cookies     *entryContent    `json:"cookies"`
	Version     int              `json:"version"`
	CreatedBy   string           `json:"createdBy"`
	CreatedAt   time.Time        `json:"createdAt"`
	UpdatedAt   time.Time        `json:"updatedAt"`
}

type entryFingerprint struct {
	UserAgent    string            `json:"userAgent"`
	Platform     string            `json:"platform"`
	Locale       string            `json:"locale"`
	Timezone     string            `json:"timezone"`
	Screen       entryScreen       `json:"screen"`
	Navigator    entryNavigator    `json:"navigator"`
	ClientHints  entryClientHints  `json:"clientHints"`
	Window       entryWindow       `json:"window"`
	WebGL        entryWebGL        `json:"webgl"`
	Fonts        []string          `json:"fonts"`
	MediaDevices entryMediaDevices `json:"mediaDevices"`
	WebRTC       string            `json:"webrtc"`
	NoiseSeed    string            `json:"noiseSeed"`
}

type entryScreen struct {
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	AvailWidth  int     `json:"availWidth"`
	AvailHeight int     `json:"availHeight"`
	ColorDepth  int     `json:"colorDepth"`
	PixelRatio  float64 `json:"pixelRatio"`
}

type entryNavigator struct {
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	MaxTouchPoints      int      `json:"maxTouchPoints"`
	Languages           []string `json:"languages"`
}

type entryClientHints struct {
	Platform        string `json:"platform"`
	PlatformVersion string `json:"platformVersion"`
	Architecture    string `json:"architecture"`
	Bitness         string `json:"bitness"`
	Model           string `json:"model"`
	Mobile          bool   `json:"mobile"`
}

type entryWindow struct {
	ChromeWidth  int `json:"chromeWidth"`
	ChromeHeight int `json:"chromeHeight"`
}

type entryWebGL struct {
	Vendor                       string     `json:"vendor"`
	Renderer                     string     `json:"renderer"`
	MaxTextureSize               int        `json:"maxTextureSize"`
	MaxRenderbufferSize          int        `json:"maxRenderbufferSize"`
	MaxViewportDims              [2]int     `json:"maxViewportDims"`
	MaxVertexAttribs             int        `json:"maxVertexAttribs"`
	MaxVertexUniformVectors      int        `json:"maxVertexUniformVectors"`
	MaxFragmentUniformVectors    int        `json:"maxFragmentUniformVectors"`
	MaxVaryingVectors            int        `json:"maxVaryingVectors"`
	MaxCombinedTextureImageUnits int        `json:"maxCombinedTextureImageUnits"`
	MaxTextureImageUnits         int        `json:"maxTextureImageUnits"`
	MaxVertexTextureImageUnits   int        `json:"maxVertexTextureImageUnits"`
	MaxCubeMapTextureSize        int        `json:"maxCubeMapTextureSize"`
	AliasedLineWidthRange        [2]float64 `json:"aliasedLineWidthRange"`
	AliasedPointSizeRange        [2]float64 `json:"aliasedPointSizeRange"`
}

type entryMediaDevices struct {
	AudioInputs  int `json:"audioInputs"`
	VideoInputs  int `json:"videoInputs"`
	AudioOutputs int `json:"audioOutputs"`
}

type entryProxy struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

type entrySession struct {
	ID           string    `json:"id"`
	StartedAt    time.Time `json:"startedAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	LaunchedBy   string    `json:"launchedBy"`
	Headless     bool      `json:"headless"`
	CDPURL       string    `json:"cdpUrl"`
	CDPTokenHash string    `json:"cdpTokenHash"`
	Node         string    `json:"node"`
}

type entryData struct {
	Content   entryContent `json:"content"`
	UpdatedAt time.Time    `json:"updatedAt"`
}

type entryContent struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// encodeEntry is p's entry; it fails only for a value JSON has no form for
// (a float that is not finite, a time past year 9999), which the domain's
// checks never let through.
func encodeEntry(p profile.Profile) ([]byte, error) {
	fp := p.Fingerprint
	e := entry{
		ID: p.ID, TeamID: p.TeamID, Name: p.Name, TemplateID: p.TemplateID, Browser: p.Browser,
		Fingerprint: entryFingerprint{
			UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
			Screen: entryScreen(fp.Screen), Navigator: entryNavigator(fp.Navigator), ClientHints: entryClientHints(fp.ClientHints),
			Window: entryWindow(fp.Window), WebGL: entryWebGL(fp.WebGL), Fonts: fp.Fonts,
			MediaDevices: entryMediaDevices(fp.MediaDevices), WebRTC: fp.WebRTC, NoiseSeed: fp.NoiseSeed,
		},
		ProxyID: p.ProxyID, Proxy: (*entryProxy)(p.Proxy), Tags: p.Tags, Notes: p.Notes,
		Session: (*entrySession)(p.Session), Cookies: (*entryContent)(p.Cookies),
		Version: p.Version, CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
	if p.Data != nil {
		e.Data = &entryData{Content: entryContent(p.Data.Content), UpdatedAt: p.Data.UpdatedAt}
	}
	return json.Marshal(&e)
}

// decodeEntry reads what encodeEntry wrote.
func decodeEntry(b []byte) (profile.Profile, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return profile.Profile{}, err
	}
	fp := e.Fingerprint
	p := profile.Profile{
		ID: e.ID, TeamID: e.TeamID, Name: e.Name, TemplateID: e.TemplateID, Browser: e.Browser,
		Fingerprint: profile.Fingerprint{
			UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
			Screen: profile.Screen(fp.Screen), Navigator: profile.Navigator(fp.Navigator), ClientHints: profile.ClientHints(fp.ClientHints),
			Window: profile.Window(fp.Window), WebGL: profile.WebGL(fp.WebGL), Fonts: fp.Fonts,
			MediaDevices: profile.MediaDevices(fp.MediaDevices), WebRTC: fp.WebRTC, NoiseSeed: fp.NoiseSeed,
		},
		ProxyID: e.ProxyID, Proxy: (*profile.ProxyRef)(e.Proxy), Tags: e.Tags, Notes: e.Notes,
		Session: (*profile.Session)(e.Session), Cookies: (*profile.Content)(e.Cookies),
		Version: e.Version, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}
	if e.Data != nil {
		p.Data = &profile.Data{Content: profile.Content(e.Data.Content), UpdatedAt: e.Data.UpdatedAt}
	}
	return p, nil
}
