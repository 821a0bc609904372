package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
)

// oddStrings are strings encoding/json escapes, or that look as if it might.
var oddStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\r\x00\x1f",
	"é ünïcode 東京", "\u2028\u2029", "bad \xff\xfe utf-8", "emoji 🎭", "/slash/", "\x7f del",
}

func randomProfileDTO(r *rand.Rand) profileDTO {
	str := func() string { return oddStrings[r.IntN(len(oddStrings))] }
	d := profileDTO{
		ID: str(), Name: str(), TemplateID: str(), Browser: str(),
		Fingerprint: randomFingerprintDTO(r, str),
		Notes:       str(), Status: str(), Version: r.IntN(1 << 30), CreatedAt: r.Int64() - r.Int64(), UpdatedAt: r.Int64(),
	}
	d.Tags = randomStrings(r, str)
	switch r.IntN(3) {
	case 1:
		d.Proxy = &proxyRefDTO{ID: str()}
	case 2:
		d.Proxy = &proxyRefDTO{ID: str(), Type: str(), Host: str(), Port: r.IntN(70000)}
	}
	if r.IntN(2) == 0 {
		s := &browserSessionDTO{ID: str(), StartedAt: r.Int64(), ExpiresAt: -r.Int64(), LaunchedBy: str(), Headless: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			u := str()
			s.CDPURL = &u
		}
		d.Session = s
	}
	if r.IntN(2) == 0 {
		d.Data = &dataDTO{SizeBytes: r.Int64(), SHA256: str(), UpdatedAt: r.Int64()}
	}
	return d
}

// oddFloats are numbers whose encoding takes each of encoding/json's
// branches: integers, short and long fractions, exponents at both ends.
var oddFloats = []float64{0, 1, -1, 0.25, 2.625, 1.0 / 3, 0.1 + 0.2, 255.875, 1e-6, 9.99e-7, 1e-7, 1.5e-300,
	1e20, 1e21, 123456789e21, -2.5e-9, math.MaxFloat64, math.SmallestNonzeroFloat64}

func randomStrings(r *rand.Rand, str func() string) []string {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+r.IntN(5))
	for i := range out {
		out[i] = str()
	}
	return out
}

func randomFingerprintDTO(r *rand.Rand, str func() string) fingerprintDTO {
	num := func() int { return r.IntN(1<<20) - 1<<19 }
	float := func() float64 { return oddFloats[r.IntN(len(oddFloats))] }
	return fingerprintDTO{
		UserAgent: str(), Platform: str(), Locale: str(), Timezone: str(),
		Screen: screenDTO{Width: num(), Height: num(), AvailWidth: num(), AvailHeight: num(), ColorDepth: num(), PixelRatio: float()},
		Navigator: navigatorDTO{HardwareConcurrency: num(), DeviceMemory: float(), MaxTouchPoints: num(),
			Languages: randomStrings(r, str)},
		ClientHints: clientHintsDTO{Platform: str(), PlatformVersion: str(), Architecture: str(), Bitness: str(), Model: str(),
			Mobile: r.IntN(2) == 0},
		Window: windowDTO{ChromeWidth: num(), ChromeHeight: num()},
		WebGL: webglDTO{Vendor: str(), Renderer: str(), MaxTextureSize: num(), MaxRenderbufferSize: num(),
			MaxViewportDims: [2]int{num(), num()}, MaxVertexAttribs: num(), MaxVertexUniformVectors: num(),
			MaxFragmentUniformVectors: num(), MaxVaryingVectors: num(), MaxCombinedTextureImageUnits: num(),
			MaxTextureImageUnits: num(), MaxVertexTextureImageUnits: num(), MaxCubeMapTextureSize: num(),
			AliasedLineWidthRange: [2]float64{float(), float()}, AliasedPointSizeRange: [2]float64{float(), float()}},
		Fonts:        randomStrings(r, str),
		MediaDevices: mediaDevicesDTO{AudioInputs: num(), VideoInputs: num(), AudioOutputs: num()},
		WebRTC:       str(), NoiseSeed: str(),
	}
}

// The profile answers are written by hand; encoding/json is the reference
// they must equal, byte for byte, envelope and page included.
func TestProfileJSONIsEncodingJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		d := randomProfileDTO(r)
		rec := httptest.NewRecorder()
		writeProfileBody(rec, 201, &d)
		want := httptest.NewRecorder()
		writeJSON(want, 201, d)
		if rec.Code != 201 || !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("profile %d:\n got %s\nwant %s", i, rec.Body, want.Body)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options"} {
			if rec.Header().Get(h) != want.Header().Get(h) {
				t.Fatalf("%s: %q, want %q", h, rec.Header().Get(h), want.Header().Get(h))
			}
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("profile %d is not JSON: %s", i, rec.Body)
		}
	}
	for _, n := range []int{0, 1, 50} {
		items := make([]profileDTO, n)
		for i := range items {
			items[i] = randomProfileDTO(r)
		}
		for _, cursor := range []string{"", "prf_01ABC", "odd <&> \xff"} {
			rec := httptest.NewRecorder()
			writeRendered(rec, 200, appendProfileList(nil, items, cursor, 50))
			want := httptest.NewRecorder()
			writeList(want, items, cursor, 50)
			if !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("page of %d, cursor %q:\n got %s\nwant %s", n, cursor, rec.Body, want.Body)
			}
		}
	}
}
