package profile_test

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// patchOf sets every field of fp.
func patchOf(fp profile.Fingerprint) profile.FingerprintPatch {
	w := fp.WebGL
	dims, lines, points := w.MaxViewportDims[:], w.AliasedLineWidthRange[:], w.AliasedPointSizeRange[:]
	return profile.FingerprintPatch{
		UserAgent: &fp.UserAgent, Platform: &fp.Platform, Locale: &fp.Locale, Timezone: &fp.Timezone,
		Screen: &profile.ScreenPatch{Width: &fp.Screen.Width, Height: &fp.Screen.Height, AvailWidth: &fp.Screen.AvailWidth,
			AvailHeight: &fp.Screen.AvailHeight, ColorDepth: &fp.Screen.ColorDepth, PixelRatio: &fp.Screen.PixelRatio},
		Navigator: &profile.NavigatorPatch{HardwareConcurrency: &fp.Navigator.HardwareConcurrency, DeviceMemory: &fp.Navigator.DeviceMemory,
			MaxTouchPoints: &fp.Navigator.MaxTouchPoints, Languages: &fp.Navigator.Languages},
		ClientHints: &profile.ClientHintsPatch{Platform: &fp.ClientHints.Platform, PlatformVersion: &fp.ClientHints.PlatformVersion,
			Architecture: &fp.ClientHints.Architecture, Bitness: &fp.ClientHints.Bitness, Model: &fp.ClientHints.Model, Mobile: &fp.ClientHints.Mobile},
		Window: &profile.WindowPatch{ChromeWidth: &fp.Window.ChromeWidth, ChromeHeight: &fp.Window.ChromeHeight},
		WebGL: &profile.WebGLPatch{Vendor: &w.Vendor, Renderer: &w.Renderer, MaxTextureSize: &w.MaxTextureSize,
			MaxRenderbufferSize: &w.MaxRenderbufferSize, MaxViewportDims: &dims, MaxVertexAttribs: &w.MaxVertexAttribs,
			MaxVertexUniformVectors: &w.MaxVertexUniformVectors, MaxFragmentUniformVectors: &w.MaxFragmentUniformVectors,
			MaxVaryingVectors: &w.MaxVaryingVectors, MaxCombinedTextureImageUnits: &w.MaxCombinedTextureImageUnits,
			MaxTextureImageUnits: &w.MaxTextureImageUnits, MaxVertexTextureImageUnits: &w.MaxVertexTextureImageUnits,
			MaxCubeMapTextureSize: &w.MaxCubeMapTextureSize, AliasedLineWidthRange: &lines, AliasedPointSizeRange: &points},
		Fonts:        &fp.Fonts,
		MediaDevices: &profile.MediaDevicesPatch{AudioInputs: &fp.MediaDevices.AudioInputs, VideoInputs: &fp.MediaDevices.VideoInputs, AudioOutputs: &fp.MediaDevices.AudioOutputs},
		WebRTC:       &fp.WebRTC, NoiseSeed: &fp.NoiseSeed,
	}
}

func ptr[T any](v T) *T { return &v }

// TestExplicitFieldsWinOverTheGeneratedDevice: a profile created with
// every field of another device is that device, field for field.
func TestExplicitFieldsWinOverTheGeneratedDevice(t *testing.T) {
	want := template(t, "tpl_chrome_mac_fr").Device("")
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us", Fingerprint: patchOf(want)}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Fingerprint, want) {
		t.Fatalf("got %+v\nwant %+v", p.Fingerprint, want)
	}
	// One field named wins, and the rest is the generated device.
	p, err = profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us",
		Fingerprint: profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{HardwareConcurrency: ptr(3)}}}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	gen := template(t, "tpl_chrome_win_us").Device("")
	gen.Navigator.HardwareConcurrency = 3
	if !reflect.DeepEqual(p.Fingerprint, gen) {
		t.Fatalf("got %+v\nwant %+v", p.Fingerprint, gen)
	}
}

// TestEveryBadFieldIsNamed sends one bad value per field and expects the
// 422 detail of exactly that field.
func TestEveryBadFieldIsNamed(t *testing.T) {
	cases := map[string]profile.FingerprintPatch{
		"fingerprint.userAgent":                          {UserAgent: ptr("a\nb")},
		"fingerprint.platform":                           {Platform: ptr("Amiga")},
		"fingerprint.locale":                             {Locale: ptr("german"), Navigator: &profile.NavigatorPatch{Languages: &[]string{"german"}}},
		"fingerprint.timezone":                           {Timezone: ptr("Mars/Olympus")},
		"fingerprint.screen.width":                       {Screen: &profile.ScreenPatch{Width: ptr(319)}},
		"fingerprint.screen.height":                      {Screen: &profile.ScreenPatch{Height: ptr(4321)}},
		"fingerprint.screen.availWidth":                  {Screen: &profile.ScreenPatch{AvailWidth: ptr(7681)}},
		"fingerprint.screen.availHeight":                 {Screen: &profile.ScreenPatch{AvailHeight: ptr(0)}},
		"fingerprint.screen.colorDepth":                  {Screen: &profile.ScreenPatch{ColorDepth: ptr(32)}},
		"fingerprint.screen.pixelRatio":                  {Screen: &profile.ScreenPatch{PixelRatio: ptr(5.5)}},
		"fingerprint.navigator.hardwareConcurrency":      {Navigator: &profile.NavigatorPatch{HardwareConcurrency: ptr(129)}},
		"fingerprint.navigator.deviceMemory":             {Navigator: &profile.NavigatorPatch{DeviceMemory: ptr(16.0)}},
		"fingerprint.navigator.maxTouchPoints":           {Navigator: &profile.NavigatorPatch{MaxTouchPoints: ptr(11)}},
		"fingerprint.navigator.languages":                {Navigator: &profile.NavigatorPatch{Languages: &[]string{"fr-FR", "en-US"}}},
		"fingerprint.clientHints.platform":               {ClientHints: &profile.ClientHintsPatch{Platform: ptr("Win32")}},
		"fingerprint.clientHints.platformVersion":        {ClientHints: &profile.ClientHintsPatch{PlatformVersion: ptr("eleven")}},
		"fingerprint.clientHints.architecture":           {ClientHints: &profile.ClientHintsPatch{Architecture: ptr("mips")}},
		"fingerprint.clientHints.bitness":                {ClientHints: &profile.ClientHintsPatch{Bitness: ptr("16")}},
		"fingerprint.clientHints.model":                  {ClientHints: &profile.ClientHintsPatch{Model: ptr(strings.Repeat("m", 65))}},
		"fingerprint.window.chromeWidth":                 {Window: &profile.WindowPatch{ChromeWidth: ptr(-1)}},
		"fingerprint.window.chromeHeight":                {Window: &profile.WindowPatch{ChromeHeight: ptr(301)}},
		"fingerprint.webgl.vendor":                       {WebGL: &profile.WebGLPatch{Vendor: ptr("")}},
		"fingerprint.webgl.renderer":                     {WebGL: &profile.WebGLPatch{Renderer: ptr("ANGLE \u202e")}},
		"fingerprint.webgl.maxTextureSize":               {WebGL: &profile.WebGLPatch{MaxTextureSize: ptr(65537)}},
		"fingerprint.webgl.maxRenderbufferSize":          {WebGL: &profile.WebGLPatch{MaxRenderbufferSize: ptr(63)}},
		"fingerprint.webgl.maxViewportDims":              {WebGL: &profile.WebGLPatch{MaxViewportDims: &[]int{16384}}},
		"fingerprint.webgl.maxVertexAttribs":             {WebGL: &profile.WebGLPatch{MaxVertexAttribs: ptr(7)}},
		"fingerprint.webgl.maxVertexUniformVectors":      {WebGL: &profile.WebGLPatch{MaxVertexUniformVectors: ptr(16385)}},
		"fingerprint.webgl.maxFragmentUniformVectors":    {WebGL: &profile.WebGLPatch{MaxFragmentUniformVectors: ptr(15)}},
		"fingerprint.webgl.maxVaryingVectors":            {WebGL: &profile.WebGLPatch{MaxVaryingVectors: ptr(65)}},
		"fingerprint.webgl.maxCombinedTextureImageUnits": {WebGL: &profile.WebGLPatch{MaxCombinedTextureImageUnits: ptr(257)}},
		"fingerprint.webgl.maxTextureImageUnits":         {WebGL: &profile.WebGLPatch{MaxTextureImageUnits: ptr(0)}},
		"fingerprint.webgl.maxVertexTextureImageUnits":   {WebGL: &profile.WebGLPatch{MaxVertexTextureImageUnits: ptr(-1)}},
		"fingerprint.webgl.maxCubeMapTextureSize":        {WebGL: &profile.WebGLPatch{MaxCubeMapTextureSize: ptr(1 << 17)}},
		"fingerprint.webgl.aliasedLineWidthRange":        {WebGL: &profile.WebGLPatch{AliasedLineWidthRange: &[]float64{2, 1}}},
		"fingerprint.webgl.aliasedPointSizeRange":        {WebGL: &profile.WebGLPatch{AliasedPointSizeRange: &[]float64{0, 1024}}},
		"fingerprint.fonts":                              {Fonts: &[]string{"Arial", strings.Repeat("f", 65)}},
		"fingerprint.mediaDevices.audioInputs":           {MediaDevices: &profile.MediaDevicesPatch{AudioInputs: ptr(17)}},
		"fingerprint.mediaDevices.videoInputs":           {MediaDevices: &profile.MediaDevicesPatch{VideoInputs: ptr(-1)}},
		"fingerprint.mediaDevices.audioOutputs":          {MediaDevices: &profile.MediaDevicesPatch{AudioOutputs: ptr(99)}},
		"fingerprint.webrtc":                             {WebRTC: ptr("default")},
		"fingerprint.noiseSeed":                          {NoiseSeed: ptr("0123456789ABCDEF")},
	}
	for field, patch := range cases {
		_, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us", Fingerprint: patch}, devices, now)
		if got := fields(t, err); !slices.Equal(got, []string{field}) {
			t.Errorf("%s: details name %v", field, got)
		}
	}
	// Lists past their bound are refused on their length, duplicates
	// included.
	for field, patch := range map[string]profile.FingerprintPatch{
		"fingerprint.fonts":               {Fonts: ptr(slices.Repeat([]string{"Arial"}, 301))},
		"fingerprint.navigator.languages": {Navigator: &profile.NavigatorPatch{Languages: ptr(slices.Repeat([]string{"en-US"}, 11))}},
	} {
		_, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us", Fingerprint: patch}, devices, now)
		if got := fields(t, err); !slices.Equal(got, []string{field}) {
			t.Errorf("long %s: details name %v", field, got)
		}
	}
	if _, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us",
		Fingerprint: profile.FingerprintPatch{Screen: &profile.ScreenPatch{PixelRatio: ptr(math.NaN())}}}, devices, now); !slices.Equal(fields(t, err), []string{"fingerprint.screen.pixelRatio"}) {
		t.Errorf("NaN pixel ratio: %v", err)
	}
}

// TestPatchMergesFieldByField: a PATCH changes the fields it names, nested
// objects merge, and the rules between fields follow (a new size keeps the
// taskbar, a new locale brings its languages).
func TestPatchMergesFieldByField(t *testing.T) {
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_win_us"}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	before := p.Fingerprint
	next, err := p.Apply(profile.Patch{Fingerprint: &profile.FingerprintPatch{
		Locale:   ptr("fr-FR"),
		Screen:   &profile.ScreenPatch{Width: ptr(1280), Height: ptr(720)},
		WebGL:    &profile.WebGLPatch{MaxTextureSize: ptr(8192)},
		Fonts:    &[]string{" Arial ", "Arial", "Segoe UI"},
		Window:   &profile.WindowPatch{ChromeHeight: ptr(100)},
		WebRTC:   ptr("disabled"),
		Timezone: ptr("Europe/Paris"),
	}}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.Locale, want.Timezone, want.Navigator.Languages = "fr-FR", "Europe/Paris", []string{"fr-FR", "fr", "en-US", "en"}
	want.Screen.Width, want.Screen.Height = 1280, 720
	want.Screen.AvailWidth, want.Screen.AvailHeight = 1280, 720-(before.Screen.Height-before.Screen.AvailHeight)
	want.WebGL.MaxTextureSize = 8192
	want.Fonts = []string{"Arial", "Segoe UI"}
	want.Window.ChromeHeight = 100
	want.WebRTC = "disabled"
	if !reflect.DeepEqual(next.Fingerprint, want) {
		t.Fatalf("got %+v\nwant %+v", next.Fingerprint, want)
	}
	if !reflect.DeepEqual(p.Fingerprint, before) {
		t.Fatal("Apply changed the original's fingerprint")
	}

	// The same locale again keeps languages a client chose.
	custom := []string{"fr-FR", "en-GB"}
	next, err = next.Apply(profile.Patch{Fingerprint: &profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{Languages: &custom}}}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	next, err = next.Apply(profile.Patch{Fingerprint: &profile.FingerprintPatch{Locale: ptr("fr-FR")}}, devices, now)
	if err != nil || !slices.Equal(next.Fingerprint.Navigator.Languages, custom) {
		t.Fatalf("languages %v, %v", next.Fingerprint.Navigator.Languages, err)
	}
	// An auto locale has no languages until launch, and refuses some.
	auto, err := next.Apply(profile.Patch{Fingerprint: &profile.FingerprintPatch{Locale: ptr("auto")}}, devices, now)
	if err != nil || len(auto.Fingerprint.Navigator.Languages) != 0 {
		t.Fatalf("auto locale: languages %v, %v", auto.Fingerprint.Navigator.Languages, err)
	}
	_, err = auto.Apply(profile.Patch{Fingerprint: &profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{Languages: &custom}}}, devices, now)
	if got := fields(t, err); !slices.Equal(got, []string{"fingerprint.navigator.languages"}) {
		t.Fatalf("languages with an auto locale: %v", got)
	}
	if resolved := auto.Fingerprint.Resolve("Asia/Tokyo", "JP"); !slices.Equal(resolved.Navigator.Languages, []string{"ja-JP", "ja", "en-US", "en"}) {
		t.Fatalf("resolved languages %v", resolved.Navigator.Languages)
	}
}

// TestANewTemplateIsANewDevice: changing the template generates a device of
// the new kind, and the patch's fields apply on top of it.
func TestANewTemplateIsANewDevice(t *testing.T) {
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_win_us"}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	next, err := p.Apply(profile.Patch{TemplateID: ptr("tpl_chrome_android_jp"),
		Fingerprint: &profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{MaxTouchPoints: ptr(10)}}}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	fp := next.Fingerprint
	if fp.Platform != "Linux armv81" || !fp.ClientHints.Mobile || fp.Locale != "ja-JP" || fp.Navigator.MaxTouchPoints != 10 ||
		fp.NoiseSeed == p.Fingerprint.NoiseSeed || next.TemplateID != "tpl_chrome_android_jp" {
		t.Fatalf("not a new phone: %+v", fp)
	}
	// The same template again keeps the device.
	same, err := p.Apply(profile.Patch{TemplateID: ptr("tpl_chrome_win_us")}, devices, now)
	if err != nil || !reflect.DeepEqual(same.Fingerprint, p.Fingerprint) {
		t.Fatalf("the same template changed the device: %v", err)
	}
}
