package paging_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
)

func TestParseLimit(t *testing.T) {
	for raw, want := range map[string]int{"": 50, "1": 1, "100": 100, "7": 7} {
		got, err := paging.ParseLimit(raw)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{"0", "101", "-1", "ten", "1.5", " 5"} {
		_, err := paging.ParseLimit(raw)
		if !domain.IsKind(err, domain.KindBadRequest) {
			t.Errorf("ParseLimit(%q): %v, want a bad request", raw, err)
		} else if got := err.Error(); got == "" {
			t.Errorf("ParseLimit(%q): empty message", raw)
		}
	}
}
