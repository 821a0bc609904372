package browserdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
)

// FuzzSanitize feeds arbitrary bytes to Sanitize: it must refuse them with a
// validation error or ErrTooLarge, or write an archive that Sanitize keeps
// exactly as it is.
func FuzzSanitize(f *testing.F) {
	limits := Limits{MaxUnpacked: 1 << 20, MaxEntries: 200, MaxPathLen: 255}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		sum, err := Sanitize(&out, bytes.NewReader(data), limits)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !domain.IsKind(err, domain.KindValidation) {
				t.Fatalf("err = %v, want a validation error or ErrTooLarge", err)
			}
			return
		}
		var again bytes.Buffer
		sum2, err := Sanitize(&again, bytes.NewReader(out.Bytes()), limits)
		if err != nil {
			t.Fatalf("the output of Sanitize is refused: %v", err)
		}
		if !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatal("sanitising the output again changed its bytes")
		}
		want := Summary{Files: sum.Files, Dirs: sum.Dirs, BytesUnpacked: sum.BytesUnpacked}
		if sum2 != want {
			t.Fatalf("second summary %+v, want %+v", sum2, want)
		}
		if _, err := io.Copy(io.Discard, &again); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzCleanPreferences feeds arbitrary text to CleanPreferences: it must
// refuse it as unreadable or too large, or return an object without any
// key that is configuration, which it keeps exactly as it is.
func FuzzCleanPreferences(f *testing.F) {
	f.Add(`{"extensions":{"settings":{}},"proxy":{"mode":"direct"},"profile":{"name":"A"}}`)
	f.Add(`{"browser":{"enabled_labs_experiments":["x@1"],"a":1},"browser.enabled_labs_experiments":[]}`)
	f.Add(`{"a":1,"a":{"proxy":2},"n":1e400}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := CleanPreferences([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrUnreadablePreferences) && !domain.IsKind(err, domain.KindValidation) {
				t.Fatalf("err = %v, want ErrUnreadablePreferences or a validation error", err)
			}
			return
		}
		var prefs map[string]any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&prefs); err != nil {
			t.Fatalf("the output is not JSON: %v\n%s", err, out)
		}
		var walk func(m map[string]any, prefix string)
		walk = func(m map[string]any, prefix string) {
			for k, v := range m {
				if isConfiguration(prefix + k) {
					t.Fatalf("the output keeps %q: %s", prefix+k, out)
				}
				if sub, ok := v.(map[string]any); ok {
					walk(sub, prefix+k+".")
				}
			}
		}
		walk(prefs, "")
		again, err := CleanPreferences(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("cleaning the output again = %s, %v; want the same bytes %s", again, err, out)
		}
	})
}

// FuzzParseNetscape feeds arbitrary text to ParseNetscape: it must refuse it
// with a validation error or ErrTooLarge, or return cookies that CheckCookies
// keeps as they are and that WriteNetscape writes so that they parse back the
// same.
func FuzzParseNetscape(f *testing.F) {
	f.Add(realisticFile)
	f.Add("example.com\tFALSE\t/\tFALSE\t0\ta\t1\n")
	f.Add("#HttpOnly_.example.com\tTRUE\t/x\tTRUE\t1798761600\tsid\t\"v\"\r\n")
	f.Add("[::1]\tFALSE\t/\tFALSE\t0\tname\n# comment\n\n")
	f.Add("a\tb\tc\td\te\tf\tg\n")
	const maxBytes = 1 << 16
	f.Fuzz(func(t *testing.T, data string) {
		cs, err := ParseNetscape(strings.NewReader(data), maxBytes)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !domain.IsKind(err, domain.KindValidation) {
				t.Fatalf("err = %v, want a validation error or ErrTooLarge", err)
			}
			return
		}
		checked, err := CheckCookies(cs)
		if err != nil {
			t.Fatalf("CheckCookies refuses parsed cookies: %v", err)
		}
		if !slices.Equal(checked, cs) {
			t.Fatalf("CheckCookies changed parsed cookies:\n%+v\n%+v", cs, checked)
		}
		var out bytes.Buffer
		if err := WriteNetscape(&out, cs); err != nil {
			t.Fatalf("WriteNetscape: %v", err)
		}
		again, err := ParseNetscape(&out, int64(out.Len()))
		if err != nil {
			t.Fatalf("the written file is refused: %v\n%q", err, out.String())
		}
		if !slices.Equal(again, cs) {
			t.Fatalf("round trip changed the cookies:\n%+v\n%+v", cs, again)
		}
	})
}
