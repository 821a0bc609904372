package httpapi

import "github.com/profilesvc/profilesvc/domain/profile"

// The fingerprint as the API shows it (profiles, templates, snapshots) and
// as requests override it: every member optional there, nested objects
// merging field by field.

type screenDTO struct {
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	AvailWidth  int     `json:"availWidth"`
	AvailHeight int     `json:"availHeight"`
	ColorDepth  int     `json:"colorDepth"`
	PixelRatio  float64 `json:"pixelRatio"`
}

type navigatorDTO struct {
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	MaxTouchPoints      int      `json:"maxTouchPoints"`
	Languages           []string `json:"languages"`
}

type clientHintsDTO struct {
	Platform        string `json:"platform"`
	PlatformVersion string `json:"platformVersion"`
	Architecture    string `json:"architecture"`
	Bitness         string `json:"bitness"`
	Model           string `json:"model"`
	Mobile          bool   `json:"mobile"`
}

type windowDTO struct {
	ChromeWidth  int `json:"chromeWidth"`
	ChromeHeight int `json:"chromeHeight"`
}

type webglDTO struct {
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

type mediaDevicesDTO struct {
	AudioInputs  int `json:"audioInputs"`
	VideoInputs  int `json:"videoInputs"`
	AudioOutputs int `json:"audioOutputs"`
}

type fingerprintDTO struct {
	UserAgent    string          `json:"userAgent"`
	Platform     string          `json:"platform"`
	Locale       string          `json:"locale"`
	Timezone     string          `json:"timezone"`
	Screen       screenDTO       `json:"screen"`
	Navigator    navigatorDTO    `json:"navigator"`
	ClientHints  clientHintsDTO  `json:"clientHints"`
	Window       windowDTO       `json:"window"`
	WebGL        webglDTO        `json:"webgl"`
	Fonts        []string        `json:"fonts"`
	MediaDevices mediaDevicesDTO `json:"mediaDevices"`
	WebRTC       string          `json:"webrtc"`
	NoiseSeed    string          `json:"noiseSeed"`
}

// toFingerprintDTO shows fp; lists are [] rather than null when empty.
func toFingerprintDTO(fp profile.Fingerprint) fingerprintDTO {
	s, n, c, w := fp.Screen, fp.Navigator, fp.ClientHints, fp.WebGL
	d := fingerprintDTO{
		UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
		Screen: screenDTO{Width: s.Width, Height: s.Height, AvailWidth: s.AvailWidth, AvailHeight: s.AvailHeight,
			ColorDepth: s.ColorDepth, PixelRatio: s.PixelRatio},
		Navigator: navigatorDTO{HardwareConcurrency: n.HardwareConcurrency, DeviceMemory: n.DeviceMemory,
			MaxTouchPoints: n.MaxTouchPoints, Languages: n.Languages},
		ClientHints: clientHintsDTO{Platform: c.Platform, PlatformVersion: c.PlatformVersion, Architecture: c.Architecture,
			Bitness: c.Bitness, Model: c.Model, Mobile: c.Mobile},
		Window: windowDTO{ChromeWidth: fp.Window.ChromeWidth, ChromeHeight: fp.Window.ChromeHeight},
		WebGL: webglDTO{Vendor: w.Vendor, Renderer: w.Renderer, MaxTextureSize: w.MaxTextureSize,
			MaxRenderbufferSize: w.MaxRenderbufferSize, MaxViewportDims: w.MaxViewportDims, MaxVertexAttribs: w.MaxVertexAttribs,
			MaxVertexUniformVectors: w.MaxVertexUniformVectors, MaxFragmentUniformVectors: w.MaxFragmentUniformVectors,
			MaxVaryingVectors: w.MaxVaryingVectors, MaxCombinedTextureImageUnits: w.MaxCombinedTextureImageUnits,
			MaxTextureImageUnits: w.MaxTextureImageUnits, MaxVertexTextureImageUnits: w.MaxVertexTextureImageUnits,
			MaxCubeMapTextureSize: w.MaxCubeMapTextureSize, AliasedLineWidthRange: w.AliasedLineWidthRange,
			AliasedPointSizeRange: w.AliasedPointSizeRange},
		Fonts: fp.Fonts,
		MediaDevices: mediaDevicesDTO{AudioInputs: fp.MediaDevices.AudioInputs, VideoInputs: fp.MediaDevices.VideoInputs,
			AudioOutputs: fp.MediaDevices.AudioOutputs},
		WebRTC: fp.WebRTC, NoiseSeed: fp.NoiseSeed,
	}
	if d.Navigator.Languages == nil {
		d.Navigator.Languages = []string{}
	}
	if d.Fonts == nil {
		d.Fonts = []string{}
	}
	return d
}

// fingerprintPatchDTO overrides some fingerprint fields; absent ones keep
// the generated device's (or the profile's) value.
type fingerprintPatchDTO struct {
	UserAgent    *string               `json:"userAgent"`
	Platform     *string               `json:"platform"`
	Locale       *string               `json:"locale"`
	Timezone     *string               `json:"timezone"`
	Screen       *screenPatchDTO       `json:"screen"`
	Navigator    *navigatorPatchDTO    `json:"navigator"`
	ClientHints  *clientHintsPatchDTO  `json:"clientHints"`
	Window       *windowPatchDTO       `json:"window"`
	WebGL        *webglPatchDTO        `json:"webgl"`
	Fonts        *[]string             `json:"fonts"`
	MediaDevices *mediaDevicesPatchDTO `json:"mediaDevices"`
	WebRTC       *string               `json:"webrtc"`
	NoiseSeed    *string               `json:"noiseSeed"`
}

type screenPatchDTO struct {
	Width       *int     `json:"width"`
	Height      *int     `json:"height"`
	AvailWidth  *int     `json:"availWidth"`
	AvailHeight *int     `json:"availHeight"`
	ColorDepth  *int     `json:"colorDepth"`
	PixelRatio  *float64 `json:"pixelRatio"`
}

type navigatorPatchDTO struct {
	HardwareConcurrency *int      `json:"hardwareConcurrency"`
	DeviceMemory        *float64  `json:"deviceMemory"`
	MaxTouchPoints      *int      `json:"maxTouchPoints"`
	Languages           *[]string `json:"languages"`
}

type clientHintsPatchDTO struct {
	Platform        *string `json:"platform"`
	PlatformVersion *string `json:"platformVersion"`
	Architecture    *string `json:"architecture"`
	Bitness         *string `json:"bitness"`
	Model           *string `json:"model"`
	Mobile          *bool   `json:"mobile"`
}

type windowPatchDTO struct {
	ChromeWidth  *int `json:"chromeWidth"`
	ChromeHeight *int `json:"chromeHeight"`
}

// webglPatchDTO takes the pairs as lists, so that the domain refuses one
// of another length by name (an array would drop or zero the rest).
type webglPatchDTO struct {
	Vendor                       *string    `json:"vendor"`
	Renderer                     *string    `json:"renderer"`
	MaxTextureSize               *int       `json:"maxTextureSize"`
	MaxRenderbufferSize          *int       `json:"maxRenderbufferSize"`
	MaxViewportDims              *[]int     `json:"maxViewportDims"`
	MaxVertexAttribs             *int       `json:"maxVertexAttribs"`
	MaxVertexUniformVectors      *int       `json:"maxVertexUniformVectors"`
	MaxFragmentUniformVectors    *int       `json:"maxFragmentUniformVectors"`
	MaxVaryingVectors            *int       `json:"maxVaryingVectors"`
	MaxCombinedTextureImageUnits *int       `json:"maxCombinedTextureImageUnits"`
	MaxTextureImageUnits         *int       `json:"maxTextureImageUnits"`
	MaxVertexTextureImageUnits   *int       `json:"maxVertexTextureImageUnits"`
	MaxCubeMapTextureSize        *int       `json:"maxCubeMapTextureSize"`
	AliasedLineWidthRange        *[]float64 `json:"aliasedLineWidthRange"`
	AliasedPointSizeRange        *[]float64 `json:"aliasedPointSizeRange"`
}

type mediaDevicesPatchDTO struct {
	AudioInputs  *int `json:"audioInputs"`
	VideoInputs  *int `json:"videoInputs"`
	AudioOutputs *int `json:"audioOutputs"`
}

func (f *fingerprintPatchDTO) patch() profile.FingerprintPatch {
	if f == nil {
		return profile.FingerprintPatch{}
	}
	p := profile.FingerprintPatch{
		UserAgent: f.UserAgent, Platform: f.Platform, Locale: f.Locale, Timezone: f.Timezone,
		Fonts: f.Fonts, WebRTC: f.WebRTC, NoiseSeed: f.NoiseSeed,
	}
	if s := f.Screen; s != nil {
		p.Screen = &profile.ScreenPatch{Width: s.Width, Height: s.Height, AvailWidth: s.AvailWidth, AvailHeight: s.AvailHeight,
			ColorDepth: s.ColorDepth, PixelRatio: s.PixelRatio}
	}
	if n := f.Navigator; n != nil {
		p.Navigator = &profile.NavigatorPatch{HardwareConcurrency: n.HardwareConcurrency, DeviceMemory: n.DeviceMemory,
			MaxTouchPoints: n.MaxTouchPoints, Languages: n.Languages}
	}
	if c := f.ClientHints; c != nil {
		p.ClientHints = &profile.ClientHintsPatch{Platform: c.Platform, PlatformVersion: c.PlatformVersion,
			Architecture: c.Architecture, Bitness: c.Bitness, Model: c.Model, Mobile: c.Mobile}
	}
	if w := f.Window; w != nil {
		p.Window = &profile.WindowPatch{ChromeWidth: w.ChromeWidth, ChromeHeight: w.ChromeHeight}
	}
	if w := f.WebGL; w != nil {
		p.WebGL = &profile.WebGLPatch{Vendor: w.Vendor, Renderer: w.Renderer, MaxTextureSize: w.MaxTextureSize,
			MaxRenderbufferSize: w.MaxRenderbufferSize, MaxViewportDims: w.MaxViewportDims, MaxVertexAttribs: w.MaxVertexAttribs,
			MaxVertexUniformVectors: w.MaxVertexUniformVectors, MaxFragmentUniformVectors: w.MaxFragmentUniformVectors,
			MaxVaryingVectors: w.MaxVaryingVectors, MaxCombinedTextureImageUnits: w.MaxCombinedTextureImageUnits,
			MaxTextureImageUnits: w.MaxTextureImageUnits, MaxVertexTextureImageUnits: w.MaxVertexTextureImageUnits,
			MaxCubeMapTextureSize: w.MaxCubeMapTextureSize, AliasedLineWidthRange: w.AliasedLineWidthRange,
			AliasedPointSizeRange: w.AliasedPointSizeRange}
	}
	if m := f.MediaDevices; m != nil {
		p.MediaDevices = &profile.MediaDevicesPatch{AudioInputs: m.AudioInputs, VideoInputs: m.VideoInputs, AudioOutputs: m.AudioOutputs}
	}
	return p
}
