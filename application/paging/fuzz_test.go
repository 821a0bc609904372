package paging_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/application/paging"
)

// FuzzCheckCursor checks the cursor and page-size rules on any input: an
// accepted cursor is the resource's prefix and 1 to 60 ASCII letters,
// digits or underscores; an accepted limit is 1 to 100.
func FuzzCheckCursor(f *testing.F) {
	for _, seed := range []string{"", "prf_01j9zzzzzzzzzzzzzzzzzzzzzz", "prf_", "prf_\x00", "prf_\xc3\x28", "prf_1' OR '1'='1", "mem_1", "prf_" + strings.Repeat("a", 61), "50", "0", "101", "-1", "1e2", " 5"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if paging.CheckCursor(s, "prf_") == nil && s != "" {
			rest, ok := strings.CutPrefix(s, "prf_")
			if !ok || rest == "" || len(s) > 64 {
				t.Fatalf("accepted cursor %q", s)
			}
			for i := 0; i < len(rest); i++ {
				c := rest[i]
				if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_') {
					t.Fatalf("accepted cursor %q with byte %q", s, c)
				}
			}
		}
		if n, err := paging.ParseLimit(s); err == nil {
			want := paging.DefaultLimit
			if s != "" {
				var perr error
				want, perr = strconv.Atoi(s)
				if perr != nil || want < 1 || want > 100 {
					t.Fatalf("accepted limit %q", s)
				}
			}
			if n != want {
				t.Fatalf("ParseLimit(%q) = %d, want %d", s, n, want)
			}
		}
	})
}
