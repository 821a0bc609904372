package domain

// UnsafeText reports whether s holds a character that can disguise text
// where a name is shown to someone else (a mail subject, an invitation, a
// log line): C0 and C1 controls such as CR and LF, DEL, and the Unicode
// bidirectional formatting characters that reorder what follows them.
func UnsafeText(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f:
			return true
		case r == 0x061c, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return true
		}
	}
	return false
}
