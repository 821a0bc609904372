//go:build linux

package chromium

import (
	"crypto/rand"
	"crypto/sha256"
	_ "embed" // device.js
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/emulation"

	"github.com/profilesvc/profilesvc/domain/profile"
)

var (
	chromeVersion = regexp.MustCompile(`Chrome/(\d+)((?:\.\d+)*)`)
	edgeVersion   = regexp.MustCompile(`Edg/(\d+)((?:\.\d+)*)`)
	macVersion    = regexp.MustCompile(`Mac OS X (\d+(?:_\d+)*)`)
	androidInfo   = regexp.MustCompile(`Android (\d+(?:\.\d+)*)(?:; ([^;)]+))?`)
)

// acceptLanguage is the language list of a browser set to locale: the
// locale first, then its base language ("de-DE,de"). Chromium gives the
// list as navigator.languages and adds the q-values to the
// Accept-Language header itself.
func acceptLanguage(locale string) string {
	base, _, found := strings.Cut(locale, "-")
	if !found || base == "" {
		return locale
	}
	return locale + "," + base
}

// posixLocale turns a BCP 47 tag ("de-DE") into the LANG value of the same
// locale ("de_DE.UTF-8").
func posixLocale(locale string) string {
	return strings.ReplaceAll(locale, "-", "_") + ".UTF-8"
}

// userAgentMetadata derives the client hints (navigator.userAgentData,
// Sec-CH-UA-*) that a real browser sending ua on platform would send, so
// that the hints do not contradict the user agent: the brands in the order
// and with the made-up brand the engine of that major version uses, and
// the engine's full version, with the device's own hints. It is nil for a
// user agent that names no Chrome version: such hints would be made up. A
// fingerprint from before the device model has no hints of its own: they
// are derived from the user agent and the platform.
func userAgentMetadata(ua, platform, version string, hints profile.ClientHints) *emulation.UserAgentMetadata {
	m := chromeVersion.FindStringSubmatch(ua)
	if m == nil {
		return nil
	}
	major := m[1]
	full := m[1] + m[2]
	if majorOf(version) == major {
		full = version
	}
	brand := "Google Chrome"
	if edgeVersion.MatchString(ua) {
		brand = "Microsoft Edge"
	}
	n, _ := strconv.Atoi(major) // digits, as the pattern says
	grease, greaseVersion, order := greasedBrand(n)
	var brands, fullList [3]*emulation.UserAgentBrandVersion
	brands[order[0]] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion}
	brands[order[1]] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: major}
	brands[order[2]] = &emulation.UserAgentBrandVersion{Brand: brand, Version: major}
	fullList[order[0]] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion + ".0.0.0"}
	fullList[order[1]] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: full}
	fullList[order[2]] = &emulation.UserAgentBrandVersion{Brand: brand, Version: full}
	md := &emulation.UserAgentMetadata{
		Brands: brands[:], FullVersionList: fullList[:],
		Architecture: "x86", Bitness: "64", FormFactors: []string{"Desktop"},
	}
	if hints.Platform != "" {
		md.Platform, md.PlatformVersion, md.Architecture, md.Bitness = hints.Platform, hints.PlatformVersion, hints.Architecture, hints.Bitness
		md.Model, md.Mobile = hints.Model, hints.Mobile
		if md.Mobile {
			md.FormFactors = []string{"Mobile"}
		}
		return md
	}
	switch {
	case strings.Contains(ua, "Android"):
		md.Platform = "Android"
		md.Architecture = "arm"
		md.Mobile = strings.Contains(ua, " Mobile")
		if md.Mobile {
			md.FormFactors = []string{"Mobile"}
		}
		if a := androidInfo.FindStringSubmatch(ua); a != nil {
			md.PlatformVersion = a[1]
			md.Model = a[2]
		}
	case platform == "Win32":
		md.Platform, md.PlatformVersion = "Windows", "10.0.0"
	case platform == "MacIntel":
		md.Platform, md.PlatformVersion = "macOS", "10.15.7"
		if v := macVersion.FindStringSubmatch(ua); v != nil {
			md.PlatformVersion = strings.ReplaceAll(v[1], "_", ".")
		}
	case platform == "iPhone" || platform == "iPad":
		md.Platform, md.Architecture = "iOS", "arm"
	default:
		md.Platform = "Linux"
		if strings.Contains(platform, "arm") || strings.Contains(platform, "aarch64") {
			md.Architecture = "arm"
		}
	}
	return md
}

// overrides are the commands that make one target present a fingerprint.
type overrides struct {
	userAgent emulation.SetUserAgentOverrideParams
	timezone  emulation.SetTimezoneOverrideParams
	locale    emulation.SetLocaleOverrideParams
	// metrics emulate a phone's screen and viewport; nil on a desktop,
	// whose screen is the browser's own (--screen-info, or the display).
	metrics *emulation.SetDeviceMetricsOverrideParams
	// touch is the touch screen of a phone; nil on a desktop.
	touch *emulation.SetTouchEmulationEnabledParams
	// script presents what no flag or setting does (deviceScript), in a
	// document or a worker.
	script string
}

//go:embed device.js
var deviceJS string

// deviceConfig is what device.js reads of the fingerprint.
type deviceConfig struct {
	Platform            string         `json:"platform"`
	HardwareConcurrency int            `json:"hardwareConcurrency,omitempty"`
	DeviceMemory        float64        `json:"deviceMemory,omitempty"`
	MaxTouchPoints      int            `json:"maxTouchPoints"`
	Chrome              *[2]int        `json:"chrome,omitempty"`
	Avail               *[2]int        `json:"avail,omitempty"`
	WebGL               map[string]any `json:"webgl"`
	NoiseSeed           string         `json:"noiseSeed"`
	Media               [3]int         `json:"media"`
	WebRTCOff           bool           `json:"webrtcOff"`
	// Secret is the launch's own: frames pass it to share what device.js
	// replaced (no page knows it).
	Secret string `json:"secret"`
}

// WebGL parameter names (the GL enums a page passes to getParameter).
const (
	glUnmaskedVendor               = 0x9245
	glUnmaskedRenderer             = 0x9246
	glMaxTextureSize               = 0x0D33
	glMaxRenderbufferSize          = 0x84E8
	glMaxViewportDims              = 0x0D3A
	glMaxVertexAttribs             = 0x8869
	glMaxVertexUniformVectors      = 0x8DFB
	glMaxFragmentUniformVectors    = 0x8DFD
	glMaxVaryingVectors            = 0x8DFC
	glMaxCombinedTextureImageUnits = 0x8B4D
	glMaxTextureImageUnits         = 0x8872
	glMaxVertexTextureImageUnits   = 0x8B4C
	glMaxCubeMapTextureSize        = 0x851C
	glAliasedLineWidthRange        = 0x846E
	glAliasedPointSizeRange        = 0x846D
)

// webglParameters are the answers of getParameter that the device sets;
// a zero value leaves the engine's own answer.
func webglParameters(w profile.WebGL) map[string]any {
	out := map[string]any{}
	put := func(name int, v any, set bool) {
		if set {
			out[strconv.Itoa(name)] = v
		}
	}
	put(glUnmaskedVendor, w.Vendor, w.Vendor != "")
	put(glUnmaskedRenderer, w.Renderer, w.Renderer != "")
	put(glMaxTextureSize, w.MaxTextureSize, w.MaxTextureSize > 0)
	put(glMaxRenderbufferSize, w.MaxRenderbufferSize, w.MaxRenderbufferSize > 0)
	put(glMaxViewportDims, w.MaxViewportDims[:], w.MaxViewportDims[0] > 0)
	put(glMaxVertexAttribs, w.MaxVertexAttribs, w.MaxVertexAttribs > 0)
	put(glMaxVertexUniformVectors, w.MaxVertexUniformVectors, w.MaxVertexUniformVectors > 0)
	put(glMaxFragmentUniformVectors, w.MaxFragmentUniformVectors, w.MaxFragmentUniformVectors > 0)
	put(glMaxVaryingVectors, w.MaxVaryingVectors, w.MaxVaryingVectors > 0)
	put(glMaxCombinedTextureImageUnits, w.MaxCombinedTextureImageUnits, w.MaxCombinedTextureImageUnits > 0)
	put(glMaxTextureImageUnits, w.MaxTextureImageUnits, w.MaxTextureImageUnits > 0)
	put(glMaxVertexTextureImageUnits, w.MaxVertexTextureImageUnits, w.MaxVertexTextureImageUnits > 0)
	put(glMaxCubeMapTextureSize, w.MaxCubeMapTextureSize, w.MaxCubeMapTextureSize > 0)
	put(glAliasedLineWidthRange, w.AliasedLineWidthRange[:], w.AliasedLineWidthRange[1] > 0)
	put(glAliasedPointSizeRange, w.AliasedPointSizeRange[:], w.AliasedPointSizeRange[1] > 0)
	return out
}

// deviceScript is device.js applied to fp; headless says whether the
// screen comes from --screen-info (a headed display has no taskbar).
func deviceScript(fp profile.Fingerprint, headless bool) string {
	cfg := deviceConfig{
		Platform:            fp.Platform,
		HardwareConcurrency: fp.Navigator.HardwareConcurrency,
		DeviceMemory:        fp.Navigator.DeviceMemory,
		MaxTouchPoints:      fp.Navigator.MaxTouchPoints,
		WebGL:               webglParameters(fp.WebGL),
		NoiseSeed:           fp.NoiseSeed,
		Media:               [3]int{fp.MediaDevices.AudioInputs, fp.MediaDevices.VideoInputs, fp.MediaDevices.AudioOutputs},
		WebRTCOff:           fp.WebRTC == profile.WebRTCDisabled,
	}
	// The window's chrome is the device's, headed too: a headless window
	// has none, and a headed one on a display without a window manager
	// reads 0x0 outside until it is laid out.
	cfg.Chrome = &[2]int{fp.Window.ChromeWidth, fp.Window.ChromeHeight}
	if !headless || fp.ClientHints.Mobile {
		// Neither a virtual display nor an emulated phone screen has a
		// taskbar or a status bar.
		sc := screenOf(fp)
		cfg.Avail = &[2]int{sc.AvailWidth, sc.AvailHeight}
	}
	if len(cfg.NoiseSeed) != 16 {
		// A fingerprint from before the noise seed: one of its own all
		// the same, from what it is.
		sum := sha256.Sum256([]byte(fp.UserAgent + "\x00" + fp.Platform + "\x00" + fp.Locale))
		cfg.NoiseSeed = hex.EncodeToString(sum[:8])
	}
	var secret [16]byte
	_, _ = rand.Read(secret[:]) // crypto/rand does not fail
	cfg.Secret = hex.EncodeToString(secret[:])
	doc, _ := json.Marshal(cfg) // plain values always marshal
	return "(" + strings.TrimSpace(deviceJS) + ")(" + string(doc) + ");"
}

// languages is navigator.languages of fp: its own list when it starts
// with the locale (an "auto" locale resolved at launch may not), else
// the locale's.
func languages(fp profile.Fingerprint) string {
	if l := fp.Navigator.Languages; len(l) > 0 && l[0] == fp.Locale {
		return strings.Join(l, ",")
	}
	return acceptLanguage(fp.Locale)
}

// overridesFor are the overrides of fp on an engine of version.
func overridesFor(fp profile.Fingerprint, version string, headless bool) overrides {
	o := overrides{
		userAgent: emulation.SetUserAgentOverrideParams{
			UserAgent:         fp.UserAgent,
			AcceptLanguage:    languages(fp),
			Platform:          fp.Platform,
			UserAgentMetadata: userAgentMetadata(fp.UserAgent, fp.Platform, version, fp.ClientHints),
		},
		timezone: emulation.SetTimezoneOverrideParams{TimezoneID: fp.Timezone},
		locale:   emulation.SetLocaleOverrideParams{Locale: fp.Locale},
		script:   deviceScript(fp, headless),
	}
	if fp.ClientHints.Mobile {
		sc := screenOf(fp)
		o.metrics = &emulation.SetDeviceMetricsOverrideParams{
			Width: int64(sc.Width), Height: int64(max(sc.AvailHeight-fp.Window.ChromeHeight, 1)), DeviceScaleFactor: sc.PixelRatio, Mobile: true,
			ScreenWidth: int64(sc.Width), ScreenHeight: int64(sc.Height),
		}
		o.touch = &emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: int64(max(fp.Navigator.MaxTouchPoints, 1))}
	}
	return o
}

// screenOf is fp's screen with what a fingerprint from before the device
// model lacks filled in: the whole screen available, 24-bit colour, one
// device pixel per CSS pixel.
func screenOf(fp profile.Fingerprint) profile.Screen {
	sc := fp.Screen
	if sc.AvailWidth <= 0 || sc.AvailWidth > sc.Width {
		sc.AvailWidth = sc.Width
	}
	if sc.AvailHeight <= 0 || sc.AvailHeight > sc.Height {
		sc.AvailHeight = sc.Height
	}
	if sc.ColorDepth <= 0 {
		sc.ColorDepth = 24
	}
	if sc.PixelRatio <= 0 {
		sc.PixelRatio = 1
	}
	return sc
}

// screenFlags are the flags that give a headless browser fp's screen, in
// device pixels as --screen-info takes it (the taskbar at the bottom, a
// Mac's menu bar at the top), and a window that fills the available part
// less the browser's chrome.
func screenFlags(fp profile.Fingerprint) []string {
	sc := screenOf(fp)
	px := devicePixels(sc.PixelRatio)
	edge := "workAreaBottom"
	if fp.Platform == "MacIntel" {
		edge = "workAreaTop"
	}
	info := fmt.Sprintf("{%dx%d %s=%d workAreaRight=%d colorDepth=%d devicePixelRatio=%s}",
		px(sc.Width), px(sc.Height), edge, px(sc.Height-sc.AvailHeight), px(sc.Width-sc.AvailWidth),
		sc.ColorDepth, strconv.FormatFloat(sc.PixelRatio, 'f', -1, 64))
	w := max(sc.AvailWidth-fp.Window.ChromeWidth, 100)
	h := max(sc.AvailHeight-fp.Window.ChromeHeight, 100)
	return []string{"--screen-info=" + info, "--window-size=" + strconv.Itoa(w) + "," + strconv.Itoa(h)}
}

// fontFaces are the faces of the fonts a browser's host has (Chromium's
// Debian package brings Liberation, fontconfig DejaVu) that stand in for
// the device's fonts: each of the device's families is drawn with one of
// them, so a page that measures text in that family finds it installed,
// while a family the device lacks falls back to the default, as a missing
// font does. Chromium takes a family that the font configuration puts
// first for the one asked as a good match.
var fontFaces = []string{
	"Liberation Sans", "Liberation Serif", "Liberation Mono", "Liberation Sans Narrow",
	"DejaVu Sans", "DejaVu Serif", "DejaVu Sans Mono", "DejaVu Sans Condensed", "DejaVu Serif Condensed",
}

// fontsConfig is the fontconfig document of a device with fonts: the
// host's configuration, and each family drawn with a face of fontFaces,
// chosen by its name so that it is the same face on every launch.
func fontsConfig(fonts []string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>` + "\n" + `<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">` + "\n<fontconfig>\n")
	b.WriteString(`<include ignore_missing="yes">/etc/fonts/fonts.conf</include>` + "\n")
	for _, name := range fonts {
		if hostFace(name) {
			continue // drawn with itself
		}
		h := fnv.New32a()
		h.Write([]byte(strings.ToLower(name)))
		face := fontFaces[h.Sum32()%uint32(len(fontFaces))]
		b.WriteString("<alias><family>")
		_ = xml.EscapeText(&b, []byte(name)) // a strings.Builder does not fail
		b.WriteString("</family><prefer><family>" + face + "</family></prefer></alias>\n")
	}
	b.WriteString("</fontconfig>\n")
	return []byte(b.String())
}

// hostFace reports whether name is one of the host's own families.
func hostFace(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "dejavu ") || strings.HasPrefix(n, "liberation ")
}

// displayScreen is the headed browser's display of fp's screen: its size
// in device pixels and its colour depth ("1920x1080x24").
func displayScreen(fp profile.Fingerprint) string {
	sc := screenOf(fp)
	px := devicePixels(sc.PixelRatio)
	return fmt.Sprintf("%dx%dx%d", px(sc.Width), px(sc.Height), sc.ColorDepth)
}

// devicePixels converts CSS pixels to device pixels at ratio, rounding
// down: Chromium rounds a screen's size in CSS pixels up, so that
// 412 CSS pixels at 2.625 are 1081 device pixels (1082 would read as 413).
func devicePixels(ratio float64) func(css int) int {
	return func(css int) int { return int(math.Floor(float64(css)*ratio + 1e-9)) }
}
