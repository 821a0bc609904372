package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// Profiles are what the service answers most, alone or by the page, and
// encoding/json spent more CPU on them than the database did reading them.
// appendProfile writes a profileDTO as encoding/json would, byte for byte
// (a test holds the two together), without reflection.

// profileBuffers keeps the buffers of profile answers between requests.
var profileBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledBuffer is the largest buffer kept for the next answer; a larger
// one (a long page) goes to the garbage collector.
const maxPooledBuffer = 256 << 10

// writeProfileBody answers status with the success envelope around d.
func writeProfileBody(w http.ResponseWriter, status int, d *profileDTO) {
	writeAppended(w, status, func(b []byte) []byte {
		b = append(b, `{"success":true,"data":`...)
		return append(appendProfile(b, d), "}\n"...)
	})
}

// appendProfileList appends the body writeList answers for a page of
// items.
func appendProfileList(b []byte, items []profileDTO, nextCursor string, limit int) []byte {
	b = append(b, `{"success":true,"data":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendProfile(b, &items[i])
	}
	b = append(b, `],"meta":{"nextCursor":`...)
	if nextCursor == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, nextCursor)
	}
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	return append(b, "}}\n"...)
}

// renderProfilePage is the body writeProfileList answers for page, in a
// slice of its own: the service may keep it (ListRendered).
func renderProfilePage(page paging.Page[profile.Profile]) []byte {
	items := make([]profileDTO, 0, len(page.Items))
	for _, p := range page.Items {
		items = append(items, toProfileDTO(p))
	}
	bp := profileBuffers.Get().(*[]byte)
	b := appendProfileList((*bp)[:0], items, page.NextCursor, page.Limit)
	out := bytes.Clone(b)
	if cap(b) <= maxPooledBuffer {
		*bp = b
		profileBuffers.Put(bp)
	}
	return out
}

// writeAppended answers status with the JSON body fill appends, with the
// headers writeBody sets.
func writeAppended(w http.ResponseWriter, status int, fill func([]byte) []byte) {
	bp := profileBuffers.Get().(*[]byte)
	b := fill((*bp)[:0])
	writeRendered(w, status, b)
	if cap(b) <= maxPooledBuffer {
		*bp = b
		profileBuffers.Put(bp)
	}
}

// writeRendered answers status with the JSON body b, with the headers
// writeBody sets.
func writeRendered(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func appendProfile(b []byte, d *profileDTO) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, d.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, d.Name)
	b = append(b, `,"templateId":`...)
	b = appendJSONString(b, d.TemplateID)
	b = append(b, `,"browser":`...)
	b = appendJSONString(b, d.Browser)
	b = append(b, `,"fingerprint":`...)
	b = appendFingerprint(b, &d.Fingerprint)
	b = append(b, `,"proxy":`...)
	if px := d.Proxy; px == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, px.ID)
		if px.Type != "" {
			b = append(b, `,"type":`...)
			b = appendJSONString(b, px.Type)
		}
		if px.Host != "" {
			b = append(b, `,"host":`...)
			b = appendJSONString(b, px.Host)
		}
		if px.Port != 0 {
			b = append(b, `,"port":`...)
			b = strconv.AppendInt(b, int64(px.Port), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"tags":`...)
	b = appendJSONStrings(b, d.Tags)
	b = append(b, `,"notes":`...)
	b = appendJSONString(b, d.Notes)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, d.Status)
	b = append(b, `,"session":`...)
	if s := d.Session; s == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, s.ID)
		b = append(b, `,"startedAt":`...)
		b = strconv.AppendInt(b, s.StartedAt, 10)
		b = append(b, `,"expiresAt":`...)
		b = strconv.AppendInt(b, s.ExpiresAt, 10)
		b = append(b, `,"launchedBy":`...)
		b = appendJSONString(b, s.LaunchedBy)
		b = append(b, `,"headless":`...)
		b = strconv.AppendBool(b, s.Headless)
		b = append(b, `,"cdpUrl":`...)
		if s.CDPURL == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *s.CDPURL)
		}
		b = append(b, '}')
	}
	b = append(b, `,"data":`...)
	if dd := d.Data; dd == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"sizeBytes":`...)
		b = strconv.AppendInt(b, dd.SizeBytes, 10)
		b = append(b, `,"sha256":`...)
		b = appendJSONString(b, dd.SHA256)
		b = append(b, `,"updatedAt":`...)
		b = strconv.AppendInt(b, dd.UpdatedAt, 10)
		b = append(b, '}')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(d.Version), 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, d.CreatedAt, 10)
	b = append(b, `,"updatedAt":`...)
	b = strconv.AppendInt(b, d.UpdatedAt, 10)
	return append(b, '}')
}

// appendFingerprint appends a fingerprintDTO as encoding/json would.
func appendFingerprint(b []byte, fp *fingerprintDTO) []byte {
	b = append(b, `{"userAgent":`...)
	b = appendJSONString(b, fp.UserAgent)
	b = append(b, `,"platform":`...)
	b = appendJSONString(b, fp.Platform)
	b = append(b, `,"locale":`...)
	b = appendJSONString(b, fp.Locale)
	b = append(b, `,"timezone":`...)
	b = appendJSONString(b, fp.Timezone)
	s := &fp.Screen
	b = appendInt(append(b, `,"screen":{"width":`...), s.Width)
	b = appendInt(append(b, `,"height":`...), s.Height)
	b = appendInt(append(b, `,"availWidth":`...), s.AvailWidth)
	b = appendInt(append(b, `,"availHeight":`...), s.AvailHeight)
	b = appendInt(append(b, `,"colorDepth":`...), s.ColorDepth)
	b = appendJSONFloat(append(b, `,"pixelRatio":`...), s.PixelRatio)
	n := &fp.Navigator
	b = appendInt(append(b, `},"navigator":{"hardwareConcurrency":`...), n.HardwareConcurrency)
	b = appendJSONFloat(append(b, `,"deviceMemory":`...), n.DeviceMemory)
	b = appendInt(append(b, `,"maxTouchPoints":`...), n.MaxTouchPoints)
	b = appendJSONStrings(append(b, `,"languages":`...), n.Languages)
	c := &fp.ClientHints
	b = appendJSONString(append(b, `},"clientHints":{"platform":`...), c.Platform)
	b = appendJSONString(append(b, `,"platformVersion":`...), c.PlatformVersion)
	b = appendJSONString(append(b, `,"architecture":`...), c.Architecture)
	b = appendJSONString(append(b, `,"bitness":`...), c.Bitness)
	b = appendJSONString(append(b, `,"model":`...), c.Model)
	b = strconv.AppendBool(append(b, `,"mobile":`...), c.Mobile)
	b = appendInt(append(b, `},"window":{"chromeWidth":`...), fp.Window.ChromeWidth)
	b = appendInt(append(b, `,"chromeHeight":`...), fp.Window.ChromeHeight)
	w := &fp.WebGL
	b = appendJSONString(append(b, `},"webgl":{"vendor":`...), w.Vendor)
	b = appendJSONString(append(b, `,"renderer":`...), w.Renderer)
	b = appendInt(append(b, `,"maxTextureSize":`...), w.MaxTextureSize)
	b = appendInt(append(b, `,"maxRenderbufferSize":`...), w.MaxRenderbufferSize)
	b = appendInt(append(b, `,"maxViewportDims":[`...), w.MaxViewportDims[0])
	b = appendInt(append(b, ','), w.MaxViewportDims[1])
	b = appendInt(append(b, `],"maxVertexAttribs":`...), w.MaxVertexAttribs)
	b = appendInt(append(b, `,"maxVertexUniformVectors":`...), w.MaxVertexUniformVectors)
	b = appendInt(append(b, `,"maxFragmentUniformVectors":`...), w.MaxFragmentUniformVectors)
	b = appendInt(append(b, `,"maxVaryingVectors":`...), w.MaxVaryingVectors)
	b = appendInt(append(b, `,"maxCombinedTextureImageUnits":`...), w.MaxCombinedTextureImageUnits)
	b = appendInt(append(b, `,"maxTextureImageUnits":`...), w.MaxTextureImageUnits)
	b = appendInt(append(b, `,"maxVertexTextureImageUnits":`...), w.MaxVertexTextureImageUnits)
	b = appendInt(append(b, `,"maxCubeMapTextureSize":`...), w.MaxCubeMapTextureSize)
	b = appendJSONFloat(append(b, `,"aliasedLineWidthRange":[`...), w.AliasedLineWidthRange[0])
	b = appendJSONFloat(append(b, ','), w.AliasedLineWidthRange[1])
	b = appendJSONFloat(append(b, `],"aliasedPointSizeRange":[`...), w.AliasedPointSizeRange[0])
	b = appendJSONFloat(append(b, ','), w.AliasedPointSizeRange[1])
	b = appendJSONStrings(append(b, `]},"fonts":`...), fp.Fonts)
	m := &fp.MediaDevices
	b = appendInt(append(b, `,"mediaDevices":{"audioInputs":`...), m.AudioInputs)
	b = appendInt(append(b, `,"videoInputs":`...), m.VideoInputs)
	b = appendInt(append(b, `,"audioOutputs":`...), m.AudioOutputs)
	b = appendJSONString(append(b, `},"webrtc":`...), fp.WebRTC)
	b = appendJSONString(append(b, `,"noiseSeed":`...), fp.NoiseSeed)
	return append(b, '}')
}

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// appendJSONStrings appends a list of strings, null for nil.
func appendJSONStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in exponent form only below 1e-6
// or from 1e21, with the exponent's leading zero dropped (1e-07 is 1e-7).
// Fingerprints hold finite numbers only (NaN and infinities fail their
// checks), for which encoding/json has no answer anyway.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s quoted. The plain case (printable ASCII that
// encoding/json leaves as it is) is copied; anything else is left to
// encoding/json, so escapes are exactly its own.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
