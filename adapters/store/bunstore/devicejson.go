package bunstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// readDevice decodes a device column into a deviceColumn as encoding/json
// would (a test holds the two together) for a document that names each
// member once, without reflection: with its fonts, a device is a few
// kilobytes of JSON, which encoding/json took about 50 µs to read, half a
// profile read's CPU. Strings without escapes are cut from column rather
// than copied. Members may come in any order; unknown ones are skipped, as
// encoding/json skips them.
func readDevice(column string) (deviceColumn, error) {
	var d deviceColumn
	r := &jsonReader{s: column}
	r.object(func(key string) {
		switch key {
		case "screen":
			r.object(func(key string) {
				switch key {
				case "availWidth":
					d.Screen.AvailWidth = r.int()
				case "availHeight":
					d.Screen.AvailHeight = r.int()
				case "colorDepth":
					d.Screen.ColorDepth = r.int()
				case "pixelRatio":
					d.Screen.PixelRatio = r.float()
				default:
					r.skip()
				}
			})
		case "navigator":
			r.object(func(key string) {
				switch key {
				case "hardwareConcurrency":
					d.Navigator.HardwareConcurrency = r.int()
				case "deviceMemory":
					d.Navigator.DeviceMemory = r.float()
				case "maxTouchPoints":
					d.Navigator.MaxTouchPoints = r.int()
				case "languages":
					d.Navigator.Languages = r.strings()
				default:
					r.skip()
				}
			})
		case "clientHints":
			r.object(func(key string) {
				switch key {
				case "platform":
					d.ClientHints.Platform = r.str()
				case "platformVersion":
					d.ClientHints.PlatformVersion = r.str()
				case "architecture":
					d.ClientHints.Architecture = r.str()
				case "bitness":
					d.ClientHints.Bitness = r.str()
				case "model":
					d.ClientHints.Model = r.str()
				case "mobile":
					d.ClientHints.Mobile = r.bool()
				default:
					r.skip()
				}
			})
		case "window":
			r.object(func(key string) {
				switch key {
				case "chromeWidth":
					d.Window.ChromeWidth = r.int()
				case "chromeHeight":
					d.Window.ChromeHeight = r.int()
				default:
					r.skip()
				}
			})
		case "webgl":
			r.webgl(&d)
		case "fonts":
			d.Fonts = r.strings()
		case "mediaDevices":
			r.object(func(key string) {
				switch key {
				case "audioInputs":
					d.MediaDevices.AudioInputs = r.int()
				case "videoInputs":
					d.MediaDevices.VideoInputs = r.int()
				case "audioOutputs":
					d.MediaDevices.AudioOutputs = r.int()
				default:
					r.skip()
				}
			})
		case "webrtc":
			d.WebRTC = r.str()
		case "noiseSeed":
			d.NoiseSeed = r.str()
		default:
			r.skip()
		}
	})
	if r.space(); r.err == nil && r.i != len(r.s) {
		r.fail("data after the document")
	}
	return d, r.err
}

func (r *jsonReader) webgl(d *deviceColumn) {
	w := &d.WebGL
	r.object(func(key string) {
		switch key {
		case "vendor":
			w.Vendor = r.str()
		case "renderer":
			w.Renderer = r.str()
		case "maxTextureSize":
			w.MaxTextureSize = r.int()
		case "maxRenderbufferSize":
			w.MaxRenderbufferSize = r.int()
		case "maxViewportDims":
			readPair(r, &w.MaxViewportDims, r.int)
		case "maxVertexAttribs":
			w.MaxVertexAttribs = r.int()
		case "maxVertexUniformVectors":
			w.MaxVertexUniformVectors = r.int()
		case "maxFragmentUniformVectors":
			w.MaxFragmentUniformVectors = r.int()
		case "maxVaryingVectors":
			w.MaxVaryingVectors = r.int()
		case "maxCombinedTextureImageUnits":
			w.MaxCombinedTextureImageUnits = r.int()
		case "maxTextureImageUnits":
			w.MaxTextureImageUnits = r.int()
		case "maxVertexTextureImageUnits":
			w.MaxVertexTextureImageUnits = r.int()
		case "maxCubeMapTextureSize":
			w.MaxCubeMapTextureSize = r.int()
		case "aliasedLineWidthRange":
			readPair(r, &w.AliasedLineWidthRange, r.float)
		case "aliasedPointSizeRange":
			readPair(r, &w.AliasedPointSizeRange, r.float)
		default:
			r.skip()
		}
	})
}

// jsonReader reads JSON from s at i; the first error stops it, and every
// read after it returns a zero value.
type jsonReader struct {
	s   string
	i   int
	err error
}

var errDeviceJSON = errors.New("malformed device JSON")

func (r *jsonReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w at byte %d: %s", errDeviceJSON, r.i, what)
		r.i = len(r.s)
	}
}

// space moves past whitespace.
func (r *jsonReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end.
func (r *jsonReader) peek() byte {
	r.space()
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

func (r *jsonReader) literal(lit string) bool {
	if len(r.s)-r.i >= len(lit) && r.s[r.i:r.i+len(lit)] == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// null reads a null, which leaves a member as it was.
func (r *jsonReader) null() bool {
	return r.peek() == 'n' && r.literal("null")
}

// object calls member for each member's name, with the reader at its
// value, which member must read.
func (r *jsonReader) object(member func(key string)) {
	if r.null() {
		return
	}
	if r.peek() != '{' {
		r.fail("want an object")
		return
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return
	}
	for r.err == nil {
		key := r.str()
		if r.peek() != ':' {
			r.fail("want a colon")
			return
		}
		r.i++
		member(key)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("want a comma or the object's end")
		}
	}
}

// array calls elem for each element, with the reader at it.
func (r *jsonReader) array(elem func()) {
	if r.peek() != '[' {
		r.fail("want an array")
		return
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return
	}
	for r.err == nil {
		elem()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail("want a comma or the array's end")
		}
	}
}

// readPair reads an array into a Go array of two, as encoding/json does:
// elements beyond two are read and dropped, missing ones are zero; null
// leaves dst as it was.
func readPair[T int | float64](r *jsonReader, dst *[2]T, read func() T) {
	if r.null() {
		return
	}
	var out [2]T
	n := 0
	r.array(func() {
		if n < 2 {
			out[n] = read()
		} else {
			r.skip()
		}
		n++
	})
	*dst = out
}

// strings reads a list of strings: nil for null, empty for [].
func (r *jsonReader) strings() []string {
	if r.null() {
		return nil
	}
	// The quotes up to the first ']' tell about how many there are: room
	// for them at once, not after a dozen copies.
	hint := 0
	if rest := r.s[r.i:]; strings.IndexByte(rest, ']') > 0 {
		hint = strings.Count(rest[:strings.IndexByte(rest, ']')], `"`) / 2
	}
	out := make([]string, 0, hint)
	r.array(func() { out = append(out, r.str()) })
	return out
}

// str reads a string: cut from s when it holds no escape and is valid
// UTF-8, else decoded by encoding/json (whose repair of bad UTF-8 is then
// the answer). null is "".
func (r *jsonReader) str() string {
	if r.null() {
		return ""
	}
	if r.peek() != '"' {
		r.fail("want a string")
		return ""
	}
	start := r.i
	plain, ascii := true, true
	for r.i++; r.i < len(r.s); r.i++ {
		c := r.s[r.i]
		if !unusual[c] {
			continue
		}
		switch {
		case c == '"':
			r.i++
			raw := r.s[start:r.i]
			if plain && (ascii || utf8.ValidString(raw)) {
				return raw[1 : len(raw)-1]
			}
			var v string
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				r.fail(err.Error())
			}
			return v
		case c == '\\':
			plain = false
			r.i++
		case c < 0x20:
			plain = false
		default:
			ascii = false
		}
	}
	r.fail("a string without its end")
	return ""
}

// unusual are the bytes str looks at: the quote, the backslash, controls
// and the bytes of non-ASCII runes.
var unusual = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// number is the text of the next number.
func (r *jsonReader) number() string {
	r.space()
	start := r.i
	for r.i < len(r.s) {
		c := r.s[r.i]
		exponentSign := (c == '+' || c == '-') && r.i > start && (r.s[r.i-1] == 'e' || r.s[r.i-1] == 'E')
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || exponentSign || c == '-' && r.i == start) {
			break
		}
		r.i++
	}
	if r.i == start {
		r.fail("want a number")
	}
	return r.s[start:r.i]
}

// int reads an integer of Go's int size; null is 0.
func (r *jsonReader) int() int {
	if r.null() {
		return 0
	}
	n, err := strconv.ParseInt(r.number(), 10, strconv.IntSize)
	if err != nil {
		r.fail(err.Error())
	}
	return int(n)
}

// float reads a number; null is 0.
func (r *jsonReader) float() float64 {
	if r.null() {
		return 0
	}
	f, err := strconv.ParseFloat(r.number(), 64)
	if err != nil {
		r.fail(err.Error())
	}
	return f
}

// bool reads true or false; null is false.
func (r *jsonReader) bool() bool {
	switch {
	case r.null():
		return false
	case r.literal("true"):
		return true
	case r.literal("false"):
		return false
	}
	r.fail("want a boolean")
	return false
}

// skip reads past one value of any kind.
func (r *jsonReader) skip() {
	switch c := r.peek(); {
	case c == '{':
		r.object(func(string) { r.skip() })
	case c == '[':
		r.array(r.skip)
	case c == '"':
		r.str()
	case c == 't', c == 'f':
		r.bool()
	case c == 'n':
		r.null()
	default:
		r.number()
	}
}
