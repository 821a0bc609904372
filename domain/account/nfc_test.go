package account_test

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/profilesvc/profilesvc/domain/account"
)

// The domain's NFC must agree with x/text's, which the tables were made
// from, on every rune and on sequences that exercise ordering, blocking and
// Hangul. (Tests may import what the domain itself may not.)
func TestNFCAgreesWithXText(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if got, want := account.NFC(s), norm.NFC.String(s); got != want {
			t.Fatalf("NFC(U+%04X) = %+q, want %+q", r, got, want)
		}
		d := norm.NFD.String(s)
		if got, want := account.NFC(d), norm.NFC.String(d); got != want {
			t.Fatalf("NFC(NFD(U+%04X)) = %+q, want %+q", r, got, want)
		}
	}
	pool := []rune{'a', 'e', 'o', 'u', 'A', 'E', 'ø', 'ß', 'ı', 0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x0323, 0x0327, 0x031B,
		0x0345, 0x0344, 0x0340, 0x0391, 0x03B1, 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x0B47, 0x0B3E, 0x0B57, 0x05B8, 0x05B7,
		0x0F71, 0x0F72, 0x0F80, 0x1E36, 0x212B, 0x2126, 0x0958, 0x093C, 0x0915, 0x3099, 0x304B, 0x309A, 0x1D15E, 0x1D165}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		rs := make([]rune, 1+rng.IntN(6))
		for i := range rs {
			rs[i] = pool[rng.IntN(len(pool))]
		}
		s := string(rs)
		if got, want := account.NFC(s), norm.NFC.String(s); got != want {
			t.Fatalf("NFC(%+q) = %+q, want %+q", s, got, want)
		}
	}
}

func TestNormalizeEmailComposes(t *testing.T) {
	if got := account.NormalizeEmail(" JOSE\u0301@Example.com "); got != "jos\u00e9@example.com" {
		t.Fatalf("NormalizeEmail = %+q, want the composed, lower-case form", got)
	}
}
