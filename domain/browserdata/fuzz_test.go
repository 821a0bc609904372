package browserdata

import (
	"bytes"
	"errors"
	"io"
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
