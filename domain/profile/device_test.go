package profile_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// draws is how many devices each test draws per template.
const draws = 300

// drawn returns n devices of the template, from a source seeded by seed.
func drawn(tpl profile.Template, engine string, seed uint64, n int) []profile.Fingerprint {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]profile.Fingerprint, n)
	for i := range out {
		out[i] = profile.Generate(tpl, engine, r)
	}
	return out
}

func template(t *testing.T, id string) profile.Template {
	t.Helper()
	tpl, ok := profile.TemplateByID(id)
	if !ok {
		t.Fatalf("no template %s", id)
	}
	return tpl
}

var seedPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// TestGeneratedDevicesAreConsistent draws many devices of every template
// and checks each against what a real device of its platform shows.
func TestGeneratedDevicesAreConsistent(t *testing.T) {
	// What each platform's browsers report, from the platforms themselves.
	type platform struct {
		uaPart, navPlatform, hintPlatform, arch, bitness string
		vendors                                          []string
		rendererPart                                     string
		font, foreignFont                                string
	}
	platforms := map[string]platform{
		"windows": {"(Windows NT 10.0; Win64; x64)", "Win32", "Windows", "x86", "64",
			[]string{"Google Inc. (Intel)", "Google Inc. (NVIDIA)", "Google Inc. (AMD)"}, "Direct3D11", "Segoe UI", "Helvetica Neue"},
		"macos": {"(Macintosh; Intel Mac OS X 10_15_7)", "MacIntel", "macOS", "arm", "64",
			[]string{"Google Inc. (Apple)"}, "ANGLE Metal Renderer: Apple M", "Helvetica Neue", "Segoe UI Emoji"},
		"linux": {"(X11; Linux x86_64)", "Linux x86_64", "Linux", "x86", "64",
			[]string{"Google Inc. (Intel)", "Google Inc. (NVIDIA Corporation)", "Google Inc. (AMD)"}, "OpenGL", "DejaVu Sans", "Segoe UI"},
		"android": {"(Linux; Android 10; K)", "Linux armv81", "Android", "", "",
			[]string{"Qualcomm", "ARM"}, "", "Roboto", "Segoe UI"},
	}
	// The processor counts Apple's chips come with.
	appleCores := map[string][]int{"Apple M1": {8}, "Apple M2": {8}, "Apple M3": {8}, "Apple M4": {10}, "Apple M1 Pro": {8, 10}}
	for _, tpl := range profile.Templates() {
		t.Run(tpl.ID, func(t *testing.T) {
			want := platforms[tpl.OS]
			for i, fp := range drawn(tpl, "", 1, draws) {
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("device %d: %s\n%+v", i, fmt.Sprintf(format, args...), fp)
				}
				if err := fp.Validate(); err != nil {
					fail("invalid: %v", err)
				}
				if !strings.Contains(fp.UserAgent, want.uaPart) || !strings.Contains(fp.UserAgent, "Chrome/156.0.0.0 ") {
					fail("user agent %q", fp.UserAgent)
				}
				if edge := strings.HasSuffix(fp.UserAgent, " Edg/156.0.0.0"); edge != (tpl.ID == "tpl_edge_win_gb") {
					fail("Edge token in %q", fp.UserAgent)
				}
				if fp.Platform != want.navPlatform || fp.ClientHints.Platform != want.hintPlatform ||
					fp.ClientHints.Architecture != want.arch || fp.ClientHints.Bitness != want.bitness {
					fail("platform %q, hints %+v", fp.Platform, fp.ClientHints)
				}
				if fp.Locale != tpl.Locale || fp.Timezone != tpl.Timezone || len(fp.Navigator.Languages) == 0 || fp.Navigator.Languages[0] != tpl.Locale {
					fail("locale %q, time zone %q, languages %v", fp.Locale, fp.Timezone, fp.Navigator.Languages)
				}
				if !slices.Contains(want.vendors, fp.WebGL.Vendor) || !strings.Contains(fp.WebGL.Renderer, want.rendererPart) {
					fail("GPU %q %q", fp.WebGL.Vendor, fp.WebGL.Renderer)
				}
				if !slices.Contains(fp.Fonts, want.font) || slices.Contains(fp.Fonts, want.foreignFont) {
					fail("fonts %v", fp.Fonts)
				}
				if fp.WebRTC != "disable_non_proxied_udp" || !seedPattern.MatchString(fp.NoiseSeed) {
					fail("webrtc %q, noise seed %q", fp.WebRTC, fp.NoiseSeed)
				}
				s := fp.Screen
				switch tpl.OS {
				case "android":
					if !fp.ClientHints.Mobile || fp.ClientHints.Model == "" || fp.Navigator.MaxTouchPoints < 5 ||
						s.Width > 480 || s.Height < s.Width || s.PixelRatio < 2 || fp.Window.ChromeWidth != 0 {
						fail("not a phone")
					}
				case "macos":
					// An Apple GPU of the chip the processor count says,
					// at twice the CSS pixels, under a menu bar.
					chip := strings.TrimSuffix(strings.TrimPrefix(fp.WebGL.Renderer, "ANGLE (Apple, ANGLE Metal Renderer: "), ", Unspecified Version)")
					if cores, ok := appleCores[chip]; ok && !slices.Contains(cores, fp.Navigator.HardwareConcurrency) {
						fail("%s with %d processors", chip, fp.Navigator.HardwareConcurrency)
					}
					if s.PixelRatio != 2 || (s.ColorDepth != 24 && s.ColorDepth != 30) || s.AvailHeight > s.Height-25 || fp.Navigator.MaxTouchPoints != 0 || fp.ClientHints.Mobile {
						fail("not a Mac's display")
					}
				default:
					if fp.ClientHints.Mobile || fp.ClientHints.Model != "" || fp.Navigator.MaxTouchPoints != 0 || s.Width < 1280 || s.ColorDepth != 24 {
						fail("not a desktop")
					}
					// A discrete graphics card goes with a desktop-class
					// processor.
					if discrete := strings.Contains(fp.WebGL.Renderer, "GeForce") || strings.Contains(fp.WebGL.Renderer, " RX "); discrete && fp.Navigator.HardwareConcurrency < 6 {
						fail("%s with %d processors", fp.WebGL.Renderer, fp.Navigator.HardwareConcurrency)
					}
				}
				if tpl.OS == "windows" && (s.AvailWidth != s.Width || fp.Window.ChromeWidth != 16) {
					fail("a Windows taskbar is at the bottom and the window frame 16 pixels wide")
				}
				// radeonsi names the kernel whose version the hints give.
				if tpl.OS == "linux" && strings.Contains(fp.WebGL.Renderer, "radeonsi") && !strings.Contains(fp.WebGL.Renderer, ", "+fp.ClientHints.PlatformVersion) {
					fail("renderer %q on kernel %s", fp.WebGL.Renderer, fp.ClientHints.PlatformVersion)
				}
			}
		})
	}
}

// TestProfilesOfATemplateAreDifferentDevices: every draw is another
// device, and beyond the noise seed the devices vary in what a detector
// compares (display, GPU, fonts, processors).
func TestProfilesOfATemplateAreDifferentDevices(t *testing.T) {
	for _, tpl := range profile.Templates() {
		t.Run(tpl.ID, func(t *testing.T) {
			devices := drawn(tpl, "", 7, draws)
			seeds, hardware := map[string]bool{}, map[string]bool{}
			screens, gpus, fonts, cores := map[profile.Screen]bool{}, map[string]bool{}, map[string]bool{}, map[int]bool{}
			for _, fp := range devices {
				seeds[fp.NoiseSeed] = true
				seedless := fp
				seedless.NoiseSeed = ""
				hardware[fmt.Sprintf("%+v", seedless)] = true
				screens[fp.Screen] = true
				gpus[fp.WebGL.Renderer] = true
				fonts[strings.Join(fp.Fonts, ",")] = true
				cores[fp.Navigator.HardwareConcurrency] = true
			}
			if len(seeds) != draws {
				t.Fatalf("%d noise seeds in %d devices", len(seeds), draws)
			}
			// Phones of one model are alike; computers differ in more.
			minDevices, minFonts := draws*9/10, draws*8/10
			if tpl.OS == "android" {
				minDevices, minFonts = 30, 5
			}
			if len(hardware) < minDevices || len(fonts) < minFonts || len(screens) < 5 || len(gpus) < 4 || len(cores) < 2 && tpl.OS != "android" {
				t.Fatalf("%d devices without their seeds, %d font lists, %d screens, %d GPUs, %d processor counts in %d draws",
					len(hardware), len(fonts), len(screens), len(gpus), len(cores), draws)
			}
		})
	}
}

func TestGenerateIsReproducibleFromItsSource(t *testing.T) {
	tpl := template(t, "tpl_chrome_win_us")
	a, b := drawn(tpl, "", 3, 20), drawn(tpl, "", 3, 20)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two sources of one seed drew different devices")
	}
	if reflect.DeepEqual(a, drawn(tpl, "", 4, 20)) {
		t.Fatal("two seeds drew the same devices")
	}
	// A template's representative device is the same on every call and
	// differs from another template's of the same platform.
	if !reflect.DeepEqual(tpl.Device(""), tpl.Device("")) {
		t.Fatal("a template's device changed between calls")
	}
	if other := template(t, "tpl_chrome_win_de").Device(""); reflect.DeepEqual(tpl.Device("").WebGL, other.WebGL) && tpl.Device("").Screen == other.Screen {
		t.Fatal("two templates show the same device")
	}
}

func TestUserAgentFollowsTheEngine(t *testing.T) {
	win, edge, android := template(t, "tpl_chrome_win_us"), template(t, "tpl_edge_win_gb"), template(t, "tpl_chrome_android_us")
	for _, c := range []struct {
		tpl    profile.Template
		engine string
		want   string
	}{
		{win, "157.0.8123.4", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/157.0.0.0 Safari/537.36"},
		{win, "", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"},
		{win, "not a version", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"},
		{edge, "150.1.2.3", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0.0.0 Safari/537.36 Edg/150.0.0.0"},
		{android, "156.0.8078.108", "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36"},
	} {
		if got := drawn(c.tpl, c.engine, 1, 1)[0].UserAgent; got != c.want {
			t.Errorf("%s on %q: %q, want %q", c.tpl.ID, c.engine, got, c.want)
		}
		if got := c.tpl.Device(c.engine).UserAgent; got != c.want {
			t.Errorf("the device of %s on %q: %q, want %q", c.tpl.ID, c.engine, got, c.want)
		}
	}
}

func TestLanguagesFor(t *testing.T) {
	for locale, want := range map[string][]string{
		"en-US":      {"en-US", "en"},
		"en":         {"en"},
		"de-DE":      {"de-DE", "de", "en-US", "en"},
		"zh-Hant-TW": {"zh-Hant-TW", "zh", "en-US", "en"},
		"auto":       nil,
	} {
		if got := profile.LanguagesFor(locale); !slices.Equal(got, want) {
			t.Errorf("LanguagesFor(%q) = %v, want %v", locale, got, want)
		}
	}
}

// TestLegacyProfilesGetAStableDevice: a fingerprint stored before devices
// existed reads as a complete device of its kind, the same on every read,
// with what was stored kept.
func TestLegacyProfilesGetAStableDevice(t *testing.T) {
	stored := profile.Fingerprint{
		UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		Platform:  "Win32", Locale: "de-DE", Timezone: "Europe/Berlin", Screen: profile.Screen{Width: 1536, Height: 864},
	}
	a := profile.CompleteLegacy(stored, "tpl_chrome_win_de", "prf_01")
	if !reflect.DeepEqual(a, profile.CompleteLegacy(stored, "tpl_chrome_win_de", "prf_01")) {
		t.Fatal("two reads of one profile gave two devices")
	}
	if err := a.Validate(); err != nil {
		t.Fatalf("legacy device invalid: %v\n%+v", err, a)
	}
	if a.UserAgent != stored.UserAgent || a.Platform != "Win32" || a.Locale != "de-DE" || a.Timezone != "Europe/Berlin" ||
		a.Screen.Width != 1536 || a.Screen.Height != 864 || a.Screen.PixelRatio != 1.25 ||
		!slices.Equal(a.Navigator.Languages, []string{"de-DE", "de", "en-US", "en"}) || !strings.Contains(a.WebGL.Renderer, "Direct3D11") {
		t.Fatalf("stored fields not kept or device not of Windows: %+v", a)
	}
	// Another profile is another device.
	seeds := map[string]bool{}
	for i := range 50 {
		seeds[profile.CompleteLegacy(stored, "tpl_chrome_win_de", fmt.Sprintf("prf_%02d", i)).NoiseSeed] = true
	}
	if len(seeds) != 50 {
		t.Fatalf("%d noise seeds for 50 legacy profiles", len(seeds))
	}
	// The stored platform decides the kind when it contradicts the
	// template (a client's override), and an auto locale has no languages
	// until launch.
	mac := stored
	mac.Platform, mac.Locale = "MacIntel", "auto"
	m := profile.CompleteLegacy(mac, "tpl_chrome_win_de", "prf_02")
	if m.WebGL.Vendor != "Google Inc. (Apple)" || m.Screen.PixelRatio != 2 || len(m.Navigator.Languages) != 0 {
		t.Fatalf("a Mac profile on a Windows template: %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("legacy Mac device invalid: %v", err)
	}
	if unknown := profile.CompleteLegacy(stored, "tpl_gone", "prf_03"); unknown.Validate() != nil || unknown.ClientHints.Platform != "Windows" {
		t.Fatalf("a profile of a template that is gone: %+v", unknown)
	}
}
