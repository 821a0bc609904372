package account

import (
	"slices"
	"unicode/utf8"
)

//go:generate go run nfc_gen.go

// The standard library has no Unicode normalisation and the domain imports
// nothing else, so NFC is done here from generated tables (nfc_tables.go,
// made from golang.org/x/text/unicode/norm, which nfc_test.go checks this
// against): canonical decomposition, canonical ordering, then canonical
// composition, as UAX #15 defines them.

// Hangul syllables decompose and compose by arithmetic (Unicode 3.12).
const (
	hangulS, hangulL, hangulV, hangulT = 0xAC00, 0x1100, 0x1161, 0x11A7
	hangulLCount, hangulVCount         = 19, 21
	hangulTCount                       = 28
	hangulNCount                       = hangulVCount * hangulTCount
	hangulSCount                       = hangulLCount * hangulNCount
)

// NFC returns s in Unicode Normalization Form C. Invalid UTF-8 bytes come
// out as U+FFFD.
func NFC(s string) string {
	if isASCII(s) {
		return s
	}
	runes := make([]rune, 0, len(s))
	for _, r := range s {
		runes = decompose(runes, r)
	}
	reorder(runes)
	return string(compose(runes))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func decompose(out []rune, r rune) []rune {
	if i := r - hangulS; i >= 0 && i < hangulSCount {
		out = append(out, hangulL+i/hangulNCount, hangulV+(i%hangulNCount)/hangulTCount)
		if t := i % hangulTCount; t != 0 {
			out = append(out, hangulT+t)
		}
		return out
	}
	if d, ok := nfcDecompositions[r]; ok {
		for _, x := range d {
			out = append(out, x)
		}
		return out
	}
	return append(out, r)
}

// reorder sorts every run of non-starters by combining class, stably.
func reorder(runes []rune) {
	for i := 0; i < len(runes); {
		if nfcCombiningClasses[runes[i]] == 0 {
			i++
			continue
		}
		j := i
		for j < len(runes) && nfcCombiningClasses[runes[j]] != 0 {
			j++
		}
		slices.SortStableFunc(runes[i:j], func(a, b rune) int {
			return int(nfcCombiningClasses[a]) - int(nfcCombiningClasses[b])
		})
		i = j
	}
}

// compose joins each character to the last starter before it when nothing
// between them blocks it (a starter, or a mark of the same or a higher
// class) and the pair has a primary composite.
func compose(runes []rune) []rune {
	out := runes[:0]
	starter, lastClass := -1, -1 // lastClass: class of the last rune after the starter, -1 if none
	for _, r := range runes {
		class := int(nfcCombiningClasses[r])
		if starter >= 0 && (lastClass == -1 || lastClass < class) {
			if c, ok := composite(out[starter], r); ok {
				out[starter] = c
				continue
			}
		}
		if class == 0 {
			starter, lastClass = len(out), -1
		} else {
			lastClass = class
		}
		out = append(out, r)
	}
	return out
}

func composite(a, b rune) (rune, bool) {
	if l := a - hangulL; l >= 0 && l < hangulLCount {
		if v := b - hangulV; v >= 0 && v < hangulVCount {
			return hangulS + (l*hangulVCount+v)*hangulTCount, true
		}
	}
	if s := a - hangulS; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulT; t > 0 && t < hangulTCount {
			return a + t, true
		}
	}
	c, ok := nfcCompositions[[2]rune{a, b}]
	return c, ok
}
