package profile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// DefaultEngineVersion is the Chromium version user agents name when no
// browser runtime tells its own (leases only, or a binary that did not
// say).
const DefaultEngineVersion = "156.0.8078.108"

// Generate draws a fresh device of t's kind: hardware, display, GPU, fonts
// and media devices of one real-world device of t's operating system,
// chosen from the distributions of that platform and consistent with each
// other (a Mac gets an Apple GPU, Mac fonts, a device pixel ratio of 2; a
// phone touch points, a phone screen and a mobile GPU), with the user
// agent of engineVersion ("" for DefaultEngineVersion), t's locale and time
// zone, and a new noise seed. It reads only Uint64 from r, whose output a
// seeded PCG keeps from release to release.
func Generate(t Template, engineVersion string, r *rand.Rand) Fingerprint {
	g := generator{r: r}
	var fp Fingerprint
	switch t.OS {
	case OSMacOS:
		fp = g.mac()
	case OSLinux:
		fp = g.linux()
	case OSAndroid:
		fp = g.android()
	default:
		fp = g.windows(t.Locale)
	}
	fp.UserAgent = UserAgent(t.OS, t.Brand, engineVersion)
	fp.Locale, fp.Timezone = t.Locale, t.Timezone
	fp.Navigator.Languages = LanguagesFor(t.Locale)
	fp.WebRTC = WebRTCProxyOnly
	fp.NoiseSeed = fmt.Sprintf("%016x", r.Uint64())
	return fp
}

// UserAgent is the user agent Chrome (or Edge, for BrandEdge) of
// engineVersion sends on os, in the reduced form current Chrome sends: the
// major version only, and frozen platform tokens ("Windows NT 10.0" on
// Windows 11 too, "Mac OS X 10_15_7", "Android 10; K" whatever the phone).
func UserAgent(os, brand, engineVersion string) string {
	v := majorVersion(engineVersion) + ".0.0.0"
	var ua string
	switch os {
	case OSMacOS:
		ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + v + " Safari/537.36"
	case OSLinux:
		ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + v + " Safari/537.36"
	case OSAndroid:
		ua = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + v + " Mobile Safari/537.36"
	default:
		ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + v + " Safari/537.36"
	}
	if brand == BrandEdge {
		ua += " Edg/" + v
	}
	return ua
}

// majorVersion is the major version of a full Chromium version ("156" of
// "156.0.8078.108"), that of DefaultEngineVersion when v names none.
func majorVersion(v string) string {
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n <= 0 {
		major, _, _ = strings.Cut(DefaultEngineVersion, ".")
	}
	return major
}

// LanguagesFor is navigator.languages of a browser set to locale: the
// locale, its language, and English after a language other than English,
// as Chrome's defaults for that locale are. An "auto" locale has none
// until launch.
func LanguagesFor(locale string) []string {
	if locale == Auto || locale == "" {
		return nil
	}
	lang, _, _ := strings.Cut(locale, "-")
	out := []string{locale}
	if lang != locale {
		out = append(out, lang)
	}
	if lang != "en" {
		out = append(out, "en-US", "en")
	}
	return out
}

// CompleteLegacy returns the fingerprint of a profile stored before
// fingerprints held a device (its user agent, platform, locale, time zone
// and screen size only) with a device of its kind: generated from a source
// seeded by the profile's id, so that every read on every instance gives
// the same one, with the stored fields kept. The kind is the stored
// platform's, else the template's.
func CompleteLegacy(stored Fingerprint, templateID, profileID string) Fingerprint {
	t, ok := TemplateByID(templateID)
	if os := osOfPlatform(stored.Platform); os != "" && (!ok || t.OS != os) {
		t = Template{OS: os, Brand: BrandChrome}
	} else if !ok {
		t = templates[0]
	}
	fp := Generate(t, "", seededRand("legacy", profileID))
	fp.UserAgent, fp.Platform, fp.Locale, fp.Timezone = stored.UserAgent, stored.Platform, stored.Locale, stored.Timezone
	fp.Navigator.Languages = LanguagesFor(stored.Locale)
	fp.Screen = fp.Screen.resized(stored.Screen.Width, stored.Screen.Height)
	if ratio, ok := pixelRatioOf(t.OS, stored.Screen.Width, stored.Screen.Height); ok {
		fp.Screen.PixelRatio = ratio
	}
	return fp
}

// osOfPlatform is the operating system whose browsers report a
// navigator.platform, or "" for one no template has.
func osOfPlatform(platform string) string {
	switch platform {
	case "Win32":
		return OSWindows
	case "MacIntel":
		return OSMacOS
	case "Linux x86_64":
		return OSLinux
	case "Linux armv81", "Linux armv8l", "Linux aarch64":
		return OSAndroid
	}
	return ""
}

// resized is the screen at another size with the same bars (taskbar,
// dock, menu bar) taken off the available area.
func (s Screen) resized(width, height int) Screen {
	barW, barH := s.Width-s.AvailWidth, s.Height-s.AvailHeight
	s.Width, s.Height = width, height
	s.AvailWidth, s.AvailHeight = min(max(width-barW, 1), width), min(max(height-barH, 1), height)
	return s
}

// pixelRatioOf is the device pixel ratio of the screens of os whose CSS
// size is width by height, when the platform's table has one.
func pixelRatioOf(os string, width, height int) (float64, bool) {
	var screens []weighted[screenSize]
	switch os {
	case OSWindows:
		screens = windowsScreens
	case OSLinux:
		screens = linuxScreens
	case OSMacOS:
		return 2, true
	case OSAndroid:
		for _, p := range phones {
			if p.v.width == width && p.v.height == height {
				return p.v.ratio, true
			}
		}
	}
	for _, s := range screens {
		if s.v.width == width && s.v.height == height {
			return s.v.ratio, true
		}
	}
	return 0, false
}

// generator draws from r.
type generator struct{ r *rand.Rand }

// n is a number from 0 to k-1.
func (g generator) n(k int) int { return int(g.r.Uint64() % uint64(k)) }

// chance is true percent times in a hundred.
func (g generator) chance(percent int) bool { return g.n(100) < percent }

// weighted is a value and its share among its alternatives.
type weighted[T any] struct {
	v T
	w int
}

// pick draws one of items by their weights.
func pick[T any](g generator, items []weighted[T]) T {
	total := 0
	for _, it := range items {
		total += it.w
	}
	n := g.n(total)
	for _, it := range items {
		if n < it.w {
			return it.v
		}
		n -= it.w
	}
	return items[len(items)-1].v
}

// screenSize is a display as pages see it: its size in CSS pixels and
// device pixels per CSS pixel.
type screenSize struct {
	width, height int
	ratio         float64
}

// fontSet is fonts present together (one product installs them all).
type fontSet struct {
	percent int // of devices that have them
	names   []string
}

// fonts is base with each optional set drawn by its share, sorted.
func (g generator) fonts(base []string, optional ...fontSet) []string {
	out := slices.Clone(base)
	for _, set := range optional {
		if g.chance(set.percent) {
			out = append(out, set.names...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// singles are fonts each present on its own, by the same share.
func singles(percent int, names ...string) []fontSet {
	out := make([]fontSet, len(names))
	for i, n := range names {
		out[i] = fontSet{percent: percent, names: []string{n}}
	}
	return out
}

// media counts the devices enumerateDevices lists: entries besides the
// devices themselves ("Default", and "Communications" on Windows) come
// with any device of the kind.
func media(inputs, cameras, outputs, extra int) MediaDevices {
	with := func(n int) int {
		if n == 0 {
			return 0
		}
		return n + extra
	}
	return MediaDevices{AudioInputs: with(inputs), VideoInputs: cameras, AudioOutputs: with(outputs)}
}

// gpu is a graphics adapter as WebGL names it, with the limits its
// driver family reports.
type gpu struct {
	vendor, renderer string
	limits           *WebGL
	// discrete GPUs go with desktop-class processors only.
	discrete bool
}

// webgl is the WebGL answer of g.
func (g gpu) webgl() WebGL {
	w := *g.limits
	w.Vendor, w.Renderer = g.vendor, g.renderer
	return w
}

// hardware draws the processor count and memory of a PC.
func (g generator) hardware() (cores int, memory float64) {
	cores = pick(g, pcCores)
	memory = pick(g, []weighted[float64]{{4, 10}, {8, 90}})
	if cores <= 4 {
		memory = pick(g, []weighted[float64]{{2, 10}, {4, 45}, {8, 45}})
	}
	return cores, memory
}

// pcGPU draws a GPU of gpus that a PC with cores processors has.
func (g generator) pcGPU(gpus []weighted[gpu], cores int) gpu {
	if cores >= 6 {
		return pick(g, gpus)
	}
	var integrated []weighted[gpu]
	for _, it := range gpus {
		if !it.v.discrete {
			integrated = append(integrated, it)
		}
	}
	return pick(g, integrated)
}

func (g generator) windows(locale string) Fingerprint {
	version := pick(g, windowsVersions)
	win11 := version != "10.0.0"
	s := pick(g, windowsScreens)
	// The taskbar is 40 device pixels high on Windows 10, 48 on Windows
	// 11, scaled with the display; a few hide it.
	taskbar := 40.0
	if win11 {
		taskbar = 48
	}
	bar := int(math.Round(taskbar / s.ratio))
	if g.chance(4) {
		bar = 0
	}
	cores, memory := g.hardware()
	lang, _, _ := strings.Cut(locale, "-")
	optional := slices.Concat([]fontSet{
		{percent: 55, names: windowsOfficeFonts},
		{percent: 20, names: []string{"Myriad Pro", "Minion Pro", "ZWAdobeF"}},
		{percent: 30, names: []string{"Arial Nova", "Georgia Pro", "Gill Sans Nova", "Neue Haas Grotesk Text Pro", "Rockwell Nova", "Verdana Pro"}},
	}, singles(15, "Roboto", "Open Sans", "Lato", "Montserrat", "Poppins", "Source Code Pro", "Fira Code",
		"JetBrains Mono", "Noto Sans", "Ubuntu", "Raleway", "Inter", "Oswald", "Droid Sans Mono"))
	if extra, ok := windowsLanguageFonts[lang]; ok {
		optional = append(optional, fontSet{percent: 90, names: extra})
	}
	if locale == "en-IN" {
		optional = append(optional, fontSet{percent: 35, names: windowsLanguageFonts["hi"]})
	}
	base := windowsFonts
	if win11 {
		base = slices.Concat(windowsFonts, windows11Fonts)
	}
	inputs, cameras, outputs := pick(g, []weighted[int]{{0, 12}, {1, 68}, {2, 20}}), pick(g, []weighted[int]{{0, 35}, {1, 60}, {2, 5}}), pick(g, []weighted[int]{{1, 55}, {2, 35}, {3, 10}})
	return Fingerprint{
		Platform: "Win32",
		Screen: Screen{Width: s.width, Height: s.height, AvailWidth: s.width, AvailHeight: s.height - bar,
			ColorDepth: 24, PixelRatio: s.ratio},
		Navigator:    Navigator{HardwareConcurrency: cores, DeviceMemory: memory},
		ClientHints:  ClientHints{Platform: "Windows", PlatformVersion: version, Architecture: "x86", Bitness: "64"},
		Window:       Window{ChromeWidth: 16, ChromeHeight: pick(g, []weighted[int]{{87, 45}, {95, 15}, {115, 28}, {123, 12}})},
		WebGL:        g.pcGPU(windowsGPUs, cores).webgl(),
		Fonts:        g.fonts(base, optional...),
		MediaDevices: media(inputs, cameras, outputs, 2),
	}
}

func (g generator) mac() Fingerprint {
	chip := pick(g, macChips)
	m := pick(g, chip.models)
	menuBar := 25
	if m.notch {
		menuBar = 38
	}
	availW, availH := m.width, m.height-menuBar
	// The Dock takes its height off the bottom, or its width off a side,
	// unless it hides itself.
	switch dock := pick(g, []weighted[int]{{0, 30}, {66, 20}, {72, 20}, {80, 15}, {-70, 10}, {-58, 5}}); {
	case dock > 0:
		availH -= dock
	case dock < 0:
		availW += dock
	}
	inputs, cameras, outputs := pick(g, []weighted[int]{{1, 85}, {2, 15}}), 1, pick(g, []weighted[int]{{1, 55}, {2, 35}, {3, 10}})
	if m.external {
		inputs, cameras = pick(g, []weighted[int]{{0, 40}, {1, 50}, {2, 10}}), pick(g, []weighted[int]{{0, 50}, {1, 50}})
	} else if g.chance(10) {
		cameras = 2
	}
	return Fingerprint{
		Platform: "MacIntel",
		Screen: Screen{Width: m.width, Height: m.height, AvailWidth: availW, AvailHeight: availH,
			ColorDepth: m.colorDepth, PixelRatio: 2},
		Navigator:   Navigator{HardwareConcurrency: chip.cores[g.n(len(chip.cores))], DeviceMemory: 8},
		ClientHints: ClientHints{Platform: "macOS", PlatformVersion: pick(g, macVersions), Architecture: "arm", Bitness: "64"},
		Window:      Window{ChromeWidth: 0, ChromeHeight: pick(g, []weighted[int]{{87, 65}, {115, 35}})},
		WebGL: WebGL{Vendor: "Google Inc. (Apple)", Renderer: "ANGLE (Apple, ANGLE Metal Renderer: " + chip.name + ", Unspecified Version)",
			MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
			MaxVertexAttribs: 16, MaxVertexUniformVectors: 1024, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 30,
			MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16,
			MaxCubeMapTextureSize: 16384, AliasedLineWidthRange: [2]float64{1, 1}, AliasedPointSizeRange: [2]float64{1, 511}},
		Fonts: g.fonts(macFonts, slices.Concat([]fontSet{
			{percent: 40, names: macOfficeFonts},
			{percent: 20, names: []string{"Myriad Pro", "Minion Pro", "Adobe Caslon Pro", "Adobe Garamond Pro"}},
			{percent: 25, names: []string{"SF Pro", "SF Pro Display", "SF Pro Text", "SF Mono", "SF Compact"}},
		}, singles(20, "Roboto", "Open Sans", "Lato", "Montserrat", "Inter", "Source Sans Pro", "Fira Code",
			"JetBrains Mono", "Source Code Pro", "Noto Sans", "Poppins", "IBM Plex Sans", "Raleway", "Work Sans",
			"Noto Serif", "Merriweather", "Playfair Display", "Nunito"))...),
		MediaDevices: media(inputs, cameras, outputs, 1),
	}
}

func (g generator) linux() Fingerprint {
	k := pick(g, linuxKernels)
	s := pick(g, linuxScreens)
	d := pick(g, linuxDesktops)
	cores, memory := g.hardware()
	gp := g.pcGPU(linuxGPUs, cores)
	// radeonsi names the kernel it runs on in its renderer string.
	gp.renderer = strings.ReplaceAll(gp.renderer, "{llvm}", k.llvm)
	gp.renderer = strings.ReplaceAll(gp.renderer, "{drm}", k.drm)
	gp.renderer = strings.ReplaceAll(gp.renderer, "{kernel}", k.release)
	inputs, cameras, outputs := pick(g, []weighted[int]{{0, 20}, {1, 65}, {2, 15}}), pick(g, []weighted[int]{{0, 40}, {1, 55}, {2, 5}}), pick(g, []weighted[int]{{1, 50}, {2, 40}, {3, 10}})
	return Fingerprint{
		Platform: "Linux x86_64",
		Screen: Screen{Width: s.width, Height: s.height, AvailWidth: s.width - d.left, AvailHeight: s.height - d.top - d.bottom,
			ColorDepth: 24, PixelRatio: s.ratio},
		Navigator:   Navigator{HardwareConcurrency: cores, DeviceMemory: memory},
		ClientHints: ClientHints{Platform: "Linux", PlatformVersion: k.version, Architecture: "x86", Bitness: "64"},
		Window:      Window{ChromeWidth: 0, ChromeHeight: pick(g, []weighted[int]{{87, 55}, {115, 30}, {124, 15}})},
		WebGL:       gp.webgl(),
		Fonts: g.fonts(linuxFonts, slices.Concat([]fontSet{
			{percent: k.ubuntu, names: []string{"Ubuntu", "Ubuntu Condensed", "Ubuntu Mono", "Ubuntu Sans", "Ubuntu Sans Mono"}},
			{percent: 35, names: []string{"Andale Mono", "Arial", "Arial Black", "Comic Sans MS", "Courier New", "Georgia", "Impact", "Times New Roman", "Trebuchet MS", "Verdana", "Webdings"}},
			{percent: 60, names: []string{"C059", "D050000L", "Nimbus Mono PS", "Nimbus Roman", "Nimbus Sans", "Nimbus Sans Narrow", "P052", "Standard Symbols PS", "URW Bookman", "URW Gothic", "Z003"}},
			{percent: 30, names: []string{"FreeMono", "FreeSans", "FreeSerif"}},
			{percent: 40, names: []string{"Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Serif CJK JP", "Noto Serif CJK SC"}},
			{percent: 25, names: []string{"Cantarell", "Source Code Pro"}},
		}, singles(15, "Roboto", "Open Sans", "Lato", "Hack", "Fira Code", "Fira Sans", "JetBrains Mono", "Inter",
			"Droid Sans Fallback", "Montserrat", "Source Sans Pro", "Terminus", "Font Awesome 6 Free", "Caladea", "Carlito"))...),
		MediaDevices: media(inputs, cameras, outputs, 1),
	}
}

func (g generator) android() Fingerprint {
	p := pick(g, phones)
	touch := 5
	if p.touch10 {
		touch = 10
	}
	return Fingerprint{
		Platform: "Linux armv81",
		// Android reports the whole screen as available.
		Screen:    Screen{Width: p.width, Height: p.height, AvailWidth: p.width, AvailHeight: p.height, ColorDepth: 24, PixelRatio: p.ratio},
		Navigator: Navigator{HardwareConcurrency: 8, DeviceMemory: p.memory, MaxTouchPoints: touch},
		ClientHints: ClientHints{Platform: "Android", PlatformVersion: p.versions[g.n(len(p.versions))],
			Model: p.model, Mobile: true},
		Window:       Window{ChromeWidth: 0, ChromeHeight: 56},
		WebGL:        p.gpu.webgl(),
		Fonts:        g.fonts(slices.Concat(androidFonts, p.fonts)),
		MediaDevices: media(pick(g, []weighted[int]{{1, 50}, {2, 30}, {3, 20}}), pick(g, []weighted[int]{{2, 70}, {3, 15}, {4, 15}}), 1, 0),
	}
}
