package account

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NFC returns s in Unicode Normalization Form C, so that an email typed
// with a precomposed character and one typed with a combining mark are the
// same. Each invalid UTF-8 byte comes out as U+FFFD first.
func NFC(s string) string {
	if !utf8.ValidString(s) {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r)
		}
		s = b.String()
	}
	return norm.NFC.String(s)
}
