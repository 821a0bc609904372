package bunstore

import (
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// deviceColumn is the device column of profiles and snapshots: every field
// of a fingerprint beyond the six that have columns of their own, as JSON.
// Rows written before the column existed hold an empty string there. Its
// parts have the fields of the domain's, in their order, so that each
// converts to the other.
type deviceColumn struct {
	Screen       deviceScreen       `json:"screen"`
	Navigator    deviceNavigator    `json:"navigator"`
	ClientHints  deviceClientHints  `json:"clientHints"`
	Window       deviceWindow       `json:"window"`
	WebGL        deviceWebGL        `json:"webgl"`
	Fonts        []string           `json:"fonts"`
	MediaDevices deviceMediaDevices `json:"mediaDevices"`
	WebRTC       string             `json:"webrtc"`
	NoiseSeed    string             `json:"noiseSeed"`
}

// deviceScreen is the screen without its size, which has columns.
type deviceScreen struct {
	AvailWidth  int     `json:"availWidth"`
	AvailHeight int     `json:"availHeight"`
	ColorDepth  int     `json:"colorDepth"`
	PixelRatio  float64 `json:"pixelRatio"`
}

type deviceNavigator struct {
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	MaxTouchPoints      int      `json:"maxTouchPoints"`
	Languages           []string `json:"languages"`
}

type deviceClientHints struct {
	Platform        string `json:"platform"`
	PlatformVersion string `json:"platformVersion"`
	Architecture    string `json:"architecture"`
	Bitness         string `json:"bitness"`
	Model           string `json:"model"`
	Mobile          bool   `json:"mobile"`
}

type deviceWindow struct {
	ChromeWidth  int `json:"chromeWidth"`
	ChromeHeight int `json:"chromeHeight"`
}

type deviceWebGL struct {
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

type deviceMediaDevices struct {
	AudioInputs  int `json:"audioInputs"`
	VideoInputs  int `json:"videoInputs"`
	AudioOutputs int `json:"audioOutputs"`
}

// deviceJSON is the device column of fp.
func deviceJSON(fp profile.Fingerprint) string {
	s := fp.Screen
	d := deviceColumn{
		Screen:    deviceScreen{AvailWidth: s.AvailWidth, AvailHeight: s.AvailHeight, ColorDepth: s.ColorDepth, PixelRatio: s.PixelRatio},
		Navigator: deviceNavigator(fp.Navigator), ClientHints: deviceClientHints(fp.ClientHints), Window: deviceWindow(fp.Window),
		WebGL: deviceWebGL(fp.WebGL), Fonts: fp.Fonts, MediaDevices: deviceMediaDevices(fp.MediaDevices),
		WebRTC: fp.WebRTC, NoiseSeed: fp.NoiseSeed,
	}
	raw, err := json.Marshal(&d)
	if err != nil { // plain data always encodes; NaN never passes the domain's checks
		panic(fmt.Sprintf("bunstore: encode device: %v", err))
	}
	return string(raw)
}

// withDevice is fp, read from its six columns, with the device of the
// device column; a row written before that column existed gets the device
// the domain derives for it from its profile's id (the same on every read).
// The column is read with encoding/json/v2's decoder (go-json-experiment):
// every profile of a page is decoded here, and it takes 14 µs and 50
// allocations for a Windows device where encoding/json takes 35 µs and 120.
func withDevice(fp profile.Fingerprint, column, templateID, profileID string) (profile.Fingerprint, error) {
	if column == "" {
		return profile.CompleteLegacy(fp, templateID, profileID), nil
	}
	var d deviceColumn
	if err := jsonv2.Unmarshal([]byte(column), &d); err != nil {
		return profile.Fingerprint{}, fmt.Errorf("bunstore: read device of profile %s: %w", profileID, err)
	}
	fp.Screen.AvailWidth, fp.Screen.AvailHeight = d.Screen.AvailWidth, d.Screen.AvailHeight
	fp.Screen.ColorDepth, fp.Screen.PixelRatio = d.Screen.ColorDepth, d.Screen.PixelRatio
	fp.Navigator = profile.Navigator(d.Navigator)
	fp.ClientHints = profile.ClientHints(d.ClientHints)
	fp.Window = profile.Window(d.Window)
	fp.WebGL = profile.WebGL(d.WebGL)
	fp.Fonts = d.Fonts
	fp.MediaDevices = profile.MediaDevices(d.MediaDevices)
	fp.WebRTC, fp.NoiseSeed = d.WebRTC, d.NoiseSeed
	return fp, nil
}
