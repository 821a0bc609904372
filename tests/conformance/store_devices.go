package conformance

import "github.com/profilesvc/profilesvc/domain/profile"

// windowsDevice is a whole device with a value in every field: fractional
// numbers that must come back to the bit, and names with quotes,
// backslashes and characters beyond ASCII, which a store that re-encodes
// them could change.
func windowsDevice() profile.Fingerprint {
	return profile.Fingerprint{
		UserAgent:   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
		Platform:    "Win32",
		Locale:      "en-US",
		Timezone:    "America/New_York",
		Screen:      profile.Screen{Width: 1536, Height: 864, AvailWidth: 1536, AvailHeight: 826, ColorDepth: 24, PixelRatio: 1.25},
		Navigator:   profile.Navigator{HardwareConcurrency: 12, DeviceMemory: 8, Languages: []string{"en-US", "en"}},
		ClientHints: profile.ClientHints{Platform: "Windows", PlatformVersion: "19.0.0", Architecture: "x86", Bitness: "64"},
		Window:      profile.Window{ChromeWidth: 16, ChromeHeight: 87},
		WebGL: profile.WebGL{
			Vendor:         "Google Inc. (NVIDIA)",
			Renderer:       "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
			MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{32767, 32767},
			MaxVertexAttribs: 16, MaxVertexUniformVectors: 4096, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 30,
			MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16, MaxCubeMapTextureSize: 16384,
			AliasedLineWidthRange: [2]float64{1, 1}, AliasedPointSizeRange: [2]float64{1, 1024},
		},
		Fonts:        []string{"Arial", "Segoe UI", "Yu Gothic", "\u30e1\u30a4\u30ea\u30aa", `Quote " and \ backslash`, "Emoji \U0001f3ad"},
		MediaDevices: profile.MediaDevices{AudioInputs: 3, VideoInputs: 1, AudioOutputs: 4},
		WebRTC:       profile.WebRTCProxyOnly,
		NoiseSeed:    "0f1e2d3c4b5a6978",
	}
}

// macDevice is another whole device: a phone's fields where a Mac has
// none would show a store that keeps fields of the device it replaced.
func macDevice() profile.Fingerprint {
	return profile.Fingerprint{
		UserAgent:   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
		Platform:    "MacIntel",
		Locale:      "fr-FR",
		Timezone:    "Europe/Paris",
		Screen:      profile.Screen{Width: 1512, Height: 982, AvailWidth: 1512, AvailHeight: 872, ColorDepth: 30, PixelRatio: 2},
		Navigator:   profile.Navigator{HardwareConcurrency: 10, DeviceMemory: 0.25, MaxTouchPoints: 0, Languages: []string{"fr-FR", "fr", "en-US", "en"}},
		ClientHints: profile.ClientHints{Platform: "macOS", PlatformVersion: "15.6.1", Architecture: "arm", Bitness: "64"},
		Window:      profile.Window{ChromeWidth: 0, ChromeHeight: 115},
		WebGL: profile.WebGL{
			Vendor:         "Google Inc. (Apple)",
			Renderer:       "ANGLE (Apple, ANGLE Metal Renderer: Apple M1 Pro, Unspecified Version)",
			MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{16384, 16384},
			MaxVertexAttribs: 16, MaxVertexUniformVectors: 1024, MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 30,
			MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 16, MaxVertexTextureImageUnits: 16, MaxCubeMapTextureSize: 16384,
			AliasedLineWidthRange: [2]float64{1, 1}, AliasedPointSizeRange: [2]float64{1, 511.875},
		},
		Fonts:        []string{"Helvetica Neue", "Menlo", "Hiragino Sans"},
		MediaDevices: profile.MediaDevices{AudioInputs: 2, VideoInputs: 1, AudioOutputs: 2},
		WebRTC:       profile.WebRTCDisabled,
		NoiseSeed:    "ffffffffffffffff",
	}
}
