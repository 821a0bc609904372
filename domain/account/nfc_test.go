package account_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/domain/account"
)

// Expected forms from the Unicode Character Database (UAX #15): canonical
// composition, canonical ordering of marks, blocking, composition
// exclusions, singletons and Hangul.
func TestNFC(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain@example.com", "plain@example.com"},
		{"jose\u0301", "jos\u00e9"},       // e + acute
		{"a\u0323\u0302", "\u1ead"},       // a + dot below + circumflex
		{"a\u0302\u0323", "\u1ead"},       // marks reordered by class first
		{"\u212b", "\u00c5"},              // ANGSTROM SIGN is a singleton to A-ring
		{"\u0958", "\u0915\u093c"},        // DEVANAGARI QA is excluded from composition
		{"\u1100\u1161\u11a8", "\uac01"},  // Hangul L V T
		{"a\u0301\u0301", "\u00e1\u0301"}, // á has no composite with a second acute
		{"\u00e9\u0300", "\u00e9\u0300"},  // no composite of é and grave
		{"\xffa", "\ufffda"},              // an invalid byte
		{"\xe2\x82", "\ufffd\ufffd"},      // each byte of a truncated sequence
	} {
		if got := account.NFC(c.in); got != c.want {
			t.Errorf("NFC(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
}

func TestNormalizeEmailComposes(t *testing.T) {
	t.Parallel()
	if got := account.NormalizeEmail(" JOSE\u0301@Example.com "); got != "jos\u00e9@example.com" {
		t.Fatalf("NormalizeEmail = %+q, want the composed, lower-case form", got)
	}
}
