package webhook_test

import (
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/webhook"
)

func TestExcerptIsOneShortLineOfText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, body, want string }{
		{"empty", "", ""},
		{"plain", `{"ok":false}`, `{"ok":false}`},
		{"spaces and controls folded", "\n  Service\tUnavailable\r\n\x00\x1b[31m  ", "Service Unavailable [31m"},
		{"bidirectional overrides dropped", "pay\u202eevil\u2066", "pay evil"},
		{"invalid UTF-8 replaced", "caf\xe9 ok", "caf\ufffd ok"},
		{"cut at 200 characters", strings.Repeat("é", 250), strings.Repeat("é", 200)},
		{"no space left at the end", strings.Repeat("a", 199) + " b", strings.Repeat("a", 199)},
	} {
		if got := webhook.Excerpt([]byte(c.body)); got != c.want {
			t.Errorf("%s: Excerpt = %q, want %q", c.name, got, c.want)
		}
	}
}
