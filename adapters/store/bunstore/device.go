package bunstore

import (
	"encoding/json"
	"fmt"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// deviceColumn is the device column of profiles and snapshots: every field
// of a fingerprint beyond the six that have columns of their own, as JSON.
// Rows written before the column existed hold an empty string there.
type deviceColumn struct {
	Screen struct {
		AvailWidth  int     `json:"availWidth"`
		AvailHeight int     `json:"availHeight"`
		ColorDepth  int     `json:"colorDepth"`
		PixelRatio  float64 `json:"pixelRatio"`
	} `json:"screen"`
	Navigator struct {
		HardwareConcurrency int      `json:"hardwareConcurrency"`
		DeviceMemory        float64  `json:"deviceMemory"`
		MaxTouchPoints      int      `json:"maxTouchPoints"`
		Languages           []string `json:"languages"`
	} `json:"navigator"`
	ClientHints struct {
		Platform        string `json:"platform"`
		PlatformVersion string `json:"platformVersion"`
		Architecture    string `json:"architecture"`
		Bitness         string `json:"bitness"`
		Model           string `json:"model"`
		Mobile          bool   `json:"mobile"`
	} `json:"clientHints"`
	Window struct {
		ChromeWidth  int `json:"chromeWidth"`
		ChromeHeight int `json:"chromeHeight"`
	} `json:"window"`
	WebGL struct {
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
	} `json:"webgl"`
	Fonts        []string `json:"fonts"`
	MediaDevices struct {
		AudioInputs  int `json:"audioInputs"`
		VideoInputs  int `json:"videoInputs"`
		AudioOutputs int `json:"audioOutputs"`
	} `json:"mediaDevices"`
	WebRTC    string `json:"webrtc"`
	NoiseSeed string `json:"noiseSeed"`
}

// deviceJSON is the device column of fp.
func deviceJSON(fp profile.Fingerprint) string {
	var d deviceColumn
	s, n, c, w := fp.Screen, fp.Navigator, fp.ClientHints, fp.WebGL
	d.Screen.AvailWidth, d.Screen.AvailHeight, d.Screen.ColorDepth, d.Screen.PixelRatio = s.AvailWidth, s.AvailHeight, s.ColorDepth, s.PixelRatio
	d.Navigator.HardwareConcurrency, d.Navigator.DeviceMemory = n.HardwareConcurrency, n.DeviceMemory
	d.Navigator.MaxTouchPoints, d.Navigator.Languages = n.MaxTouchPoints, n.Languages
	d.ClientHints.Platform, d.ClientHints.PlatformVersion, d.ClientHints.Architecture = c.Platform, c.PlatformVersion, c.Architecture
	d.ClientHints.Bitness, d.ClientHints.Model, d.ClientHints.Mobile = c.Bitness, c.Model, c.Mobile
	d.Window.ChromeWidth, d.Window.ChromeHeight = fp.Window.ChromeWidth, fp.Window.ChromeHeight
	d.WebGL.Vendor, d.WebGL.Renderer = w.Vendor, w.Renderer
	d.WebGL.MaxTextureSize, d.WebGL.MaxRenderbufferSize, d.WebGL.MaxViewportDims = w.MaxTextureSize, w.MaxRenderbufferSize, w.MaxViewportDims
	d.WebGL.MaxVertexAttribs, d.WebGL.MaxVertexUniformVectors = w.MaxVertexAttribs, w.MaxVertexUniformVectors
	d.WebGL.MaxFragmentUniformVectors, d.WebGL.MaxVaryingVectors = w.MaxFragmentUniformVectors, w.MaxVaryingVectors
	d.WebGL.MaxCombinedTextureImageUnits, d.WebGL.MaxTextureImageUnits = w.MaxCombinedTextureImageUnits, w.MaxTextureImageUnits
	d.WebGL.MaxVertexTextureImageUnits, d.WebGL.MaxCubeMapTextureSize = w.MaxVertexTextureImageUnits, w.MaxCubeMapTextureSize
	d.WebGL.AliasedLineWidthRange, d.WebGL.AliasedPointSizeRange = w.AliasedLineWidthRange, w.AliasedPointSizeRange
	d.Fonts = fp.Fonts
	d.MediaDevices.AudioInputs, d.MediaDevices.VideoInputs, d.MediaDevices.AudioOutputs = fp.MediaDevices.AudioInputs, fp.MediaDevices.VideoInputs, fp.MediaDevices.AudioOutputs
	d.WebRTC, d.NoiseSeed = fp.WebRTC, fp.NoiseSeed
	raw, err := json.Marshal(&d)
	if err != nil { // plain data always encodes; NaN never passes the domain's checks
		panic(fmt.Sprintf("bunstore: encode device: %v", err))
	}
	return string(raw)
}

// withDevice is fp, read from its six columns, with the device of the
// device column; a row written before that column existed gets the device
// the domain derives for it from its profile's id (the same on every read).
func withDevice(fp profile.Fingerprint, column, templateID, profileID string) (profile.Fingerprint, error) {
	if column == "" {
		return profile.CompleteLegacy(fp, templateID, profileID), nil
	}
	d, err := readDevice(column)
	if err != nil {
		return profile.Fingerprint{}, fmt.Errorf("bunstore: read device of profile %s: %w", profileID, err)
	}
	fp.Screen.AvailWidth, fp.Screen.AvailHeight, fp.Screen.ColorDepth, fp.Screen.PixelRatio = d.Screen.AvailWidth, d.Screen.AvailHeight, d.Screen.ColorDepth, d.Screen.PixelRatio
	fp.Navigator = profile.Navigator{HardwareConcurrency: d.Navigator.HardwareConcurrency, DeviceMemory: d.Navigator.DeviceMemory,
		MaxTouchPoints: d.Navigator.MaxTouchPoints, Languages: d.Navigator.Languages}
	fp.ClientHints = profile.ClientHints(d.ClientHints)
	fp.Window = profile.Window(d.Window)
	fp.WebGL = profile.WebGL(d.WebGL)
	fp.Fonts = d.Fonts
	fp.MediaDevices = profile.MediaDevices(d.MediaDevices)
	fp.WebRTC, fp.NoiseSeed = d.WebRTC, d.NoiseSeed
	return fp, nil
}
