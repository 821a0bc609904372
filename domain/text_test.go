package domain_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/domain"
)

func TestUnsafeText(t *testing.T) {
	for _, s := range []string{"a\nb", "a\rb", "tab\t", "nul\x00", "del\x7f", "c1\u0085", "\u202eevil", "x\u2066y\u2069", "\u200f", "\u061c"} {
		if !domain.UnsafeText(s) {
			t.Errorf("UnsafeText(%q) = false", s)
		}
	}
	for _, s := range []string{"", "Growth team", "Équipe ☃ 東京", "emoji 🙂", "zero\u200bwidth space"} {
		if domain.UnsafeText(s) {
			t.Errorf("UnsafeText(%q) = true", s)
		}
	}
}
