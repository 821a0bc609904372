package bunstore

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// deviceStrings are strings that JSON escapes, or that look as if it might.
var deviceStrings = []string{
	"", "plain", `quote " and \ backslash`, "<&>", "tab\tnew\nline\x00\x1f", "é ünïcode 東京", "\u2028",
	"bad \xff utf-8", "emoji 🎭", "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
}

var deviceFloats = []float64{0, 1, -1, 0.25, 2.625, 1.0 / 3, 255.875, 1e-7, 1e21, -2.5e-9, math.MaxFloat64, math.SmallestNonzeroFloat64}

func randomDeviceColumn(r *rand.Rand) deviceColumn {
	str := func() string { return deviceStrings[r.IntN(len(deviceStrings))] }
	n := func() int { return int(r.Int64()) >> r.IntN(64) }
	f := func() float64 { return deviceFloats[r.IntN(len(deviceFloats))] }
	list := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		out := make([]string, 1+r.IntN(200))
		for i := range out {
			out[i] = str()
		}
		return out
	}
	var d deviceColumn
	d.Screen.AvailWidth, d.Screen.AvailHeight, d.Screen.ColorDepth, d.Screen.PixelRatio = n(), n(), n(), f()
	d.Navigator.HardwareConcurrency, d.Navigator.DeviceMemory, d.Navigator.MaxTouchPoints, d.Navigator.Languages = n(), f(), n(), list()
	d.ClientHints.Platform, d.ClientHints.PlatformVersion, d.ClientHints.Architecture = str(), str(), str()
	d.ClientHints.Bitness, d.ClientHints.Model, d.ClientHints.Mobile = str(), str(), r.IntN(2) == 0
	d.Window.ChromeWidth, d.Window.ChromeHeight = n(), n()
	w := &d.WebGL
	w.Vendor, w.Renderer, w.MaxTextureSize, w.MaxRenderbufferSize = str(), str(), n(), n()
	w.MaxViewportDims = [2]int{n(), n()}
	w.MaxVertexAttribs, w.MaxVertexUniformVectors, w.MaxFragmentUniformVectors, w.MaxVaryingVectors = n(), n(), n(), n()
	w.MaxCombinedTextureImageUnits, w.MaxTextureImageUnits, w.MaxVertexTextureImageUnits, w.MaxCubeMapTextureSize = n(), n(), n(), n()
	w.AliasedLineWidthRange, w.AliasedPointSizeRange = [2]float64{f(), f()}, [2]float64{f(), f()}
	d.Fonts = list()
	d.MediaDevices.AudioInputs, d.MediaDevices.VideoInputs, d.MediaDevices.AudioOutputs = n(), n(), n()
	d.WebRTC, d.NoiseSeed = str(), str()
	return d
}

// checkAsEncodingJSON reads doc both ways and wants the same device, or an
// error from both.
func checkAsEncodingJSON(t *testing.T, doc string) {
	t.Helper()
	var want deviceColumn
	wantErr := json.Unmarshal([]byte(doc), &want)
	got, err := readDevice(doc)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("%s\nread without error; encoding/json: %v", doc, wantErr)
	case wantErr == nil && err != nil:
		t.Fatalf("%s\nerror %v; encoding/json read it", doc, err)
	case wantErr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%s\n got %+v\nwant %+v", doc, got, want)
	}
}

// The device column is read by hand; encoding/json is the reference it
// must agree with.
func TestDeviceColumnReadsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		raw, err := json.Marshal(randomDeviceColumn(r))
		if err != nil {
			t.Fatal(err)
		}
		checkAsEncodingJSON(t, string(raw))
	}
	// What a hand or another version may have written: members in
	// another order, spaces, unknown members, nulls, pairs of other
	// lengths, escapes in names.
	for _, doc := range []string{
		`{}`, `null`, ` { } `,
		`{"noiseSeed":"00ff00ff00ff00ff","webrtc":"disabled","fonts":["Arial","Segoe UI"],"screen":{"pixelRatio":1.25,"availWidth":1536}}`,
		"{\n  \"screen\" : { \"colorDepth\" : 30 } ,\n\t\"fonts\" : [ \"A\" , \"B\" ]\r\n}",
		`{"future":{"nested":[1,{"a":[true,false,null]},"s"]},"window":{"chromeWidth":16,"extra":-1.5e3},"other":null}`,
		`{"screen":null,"navigator":{"languages":null,"deviceMemory":null},"fonts":null,"webgl":{"vendor":null}}`,
		`{"webgl":{"maxViewportDims":[],"aliasedLineWidthRange":[1],"aliasedPointSizeRange":[1,2,3,4]}}`,
		`{"webgl":{"maxViewportDims":null}}`,
		`{"n\u006fiseSeed":"x","fonts":["\u0041rial","tab\there","\ud83c\udfad"]}`,
		`{"clientHints":{"mobile":true,"model":"Pixel 8"},"navigator":{"maxTouchPoints":5,"hardwareConcurrency":8}}`,
		`{"screen":{"pixelRatio":2.625e0,"availWidth":-0},"navigator":{"deviceMemory":0.25}}`,
	} {
		checkAsEncodingJSON(t, doc)
	}
	// Documents that encoding/json refuses are refused.
	for _, doc := range []string{
		``, `{`, `{"fonts":["a"`, `{"fonts":"Arial"}`, `{"screen":{"availWidth":1.5}}`, `{"screen":{"availWidth":"1"}}`,
		`{"screen":{"availWidth":1e3}}`, `{"clientHints":{"mobile":"yes"}}`, `{"webrtc":1}`, `{"fonts":["a\x01"]}`,
		`{"fonts":["a"]} x`, `{"fonts":["a",]}`, `{"a" 1}`, `{"a":1,}`, `{"screen":{"availWidth":99999999999999999999}}`,
		`[]`, `{"webgl":{"maxViewportDims":{"a":1}}}`, `{"fonts":["\x"]}`,
	} {
		if _, err := readDevice(doc); err == nil {
			t.Errorf("%q read without error", doc)
		}
	}
}

// A device round-trips through its column exactly, and reads in a few
// microseconds (the benchmark below).
func TestDeviceColumnRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tpl := range profile.Templates() {
		fp := tpl.Device("")
		got, err := withDevice(profile.Fingerprint{UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale,
			Timezone: fp.Timezone, Screen: profile.Screen{Width: fp.Screen.Width, Height: fp.Screen.Height}},
			deviceJSON(fp), tpl.ID, "prf_1")
		if err != nil || !reflect.DeepEqual(got, fp) {
			t.Fatalf("%s: %v\n got %+v\nwant %+v", tpl.ID, err, got, fp)
		}
	}
	if _, err := withDevice(profile.Fingerprint{}, `{"fonts":`, "tpl_chrome_win_us", "prf_bad"); err == nil || !strings.Contains(err.Error(), "prf_bad") {
		t.Fatalf("a broken column: %v", err)
	}
}

func BenchmarkDeviceColumnRead(b *testing.B) {
	tpl, _ := profile.TemplateByID("tpl_chrome_win_de")
	col := deviceJSON(tpl.Device(""))
	b.ReportAllocs()
	b.SetBytes(int64(len(col)))
	for b.Loop() {
		if _, err := readDevice(col); err != nil {
			b.Fatal(err)
		}
	}
}
