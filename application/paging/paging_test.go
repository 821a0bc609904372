package paging_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
)

func id(s string) string { return "prf_" + s }

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		items  []string
		limit  int
		want   []string
		cursor string
	}{
		{"nothing", nil, 2, nil, ""},
		{"fewer than the limit", []string{"c"}, 2, []string{"c"}, ""},
		{"exactly the limit: the last page", []string{"c", "b"}, 2, []string{"c", "b"}, ""},
		{"one more than the limit", []string{"c", "b", "a"}, 2, []string{"c", "b"}, "prf_b"},
		{"a limit of one", []string{"c", "b"}, 1, []string{"c"}, "prf_c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := paging.Cut(tc.items, tc.limit, id)
			if !slices.Equal(p.Items, tc.want) || p.NextCursor != tc.cursor || p.Limit != tc.limit {
				t.Fatalf("page %+v, want items %v, cursor %q, limit %d", p, tc.want, tc.cursor, tc.limit)
			}
		})
	}
}

func TestCheckCursor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cursor string
		ok     bool
	}{
		{"no cursor", "", true},
		{"an id of the resource", "mem_01j0000000000000000000000", true},
		{"64 characters", "mem_" + strings.Repeat("0", 60), true},
		{"65 characters", "mem_" + strings.Repeat("0", 61), false},
		{"another resource's id", "prf_01j0000000000000000000000", false},
		{"the prefix without its underscore", "mem01j", false},
		{"anything else", "' OR 1=1 --", false},
		{"a NUL after the prefix", "mem_\x00", false},
		{"SQL after the prefix", "mem_1' OR '1'='1", false},
		{"invalid UTF-8 after the prefix", "mem_\xc3\x28", false},
		{"other letters after the prefix", "mem_é", false},
		{"a space after the prefix", "mem_01j 0", false},
		{"the prefix alone", "mem_", false},
		{"an id with underscores", "mem_team_1_user_2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := paging.CheckCursor(tc.cursor, "mem_")
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && !domain.IsKind(err, domain.KindBadRequest) {
				t.Fatalf("err = %v, want a bad request", err)
			}
		})
	}
}
