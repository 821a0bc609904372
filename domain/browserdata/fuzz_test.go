package browserdata

import (
	"bytes"
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
