package apptest

import (
	"fmt"
	"sync"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IDs = (*IDs)(nil)

// IDs makes ids "<prefix>_<n>" from a count, so that an id made later sorts
// higher, as the real ones do.
type IDs struct {
	perPrefix bool
	format    string

	mu sync.Mutex
	n  map[string]int
}

// NewIDs returns ids numbered by one count across every prefix, in twenty
// digits: "usr_00000000000000000001", then "team_00000000000000000002".
func NewIDs() *IDs { return &IDs{format: "%s_%020d", n: map[string]int{}} }

// NewPrefixIDs returns ids numbered per prefix, in three digits: "prf_001",
// then "ses_001" and "prf_002".
func NewPrefixIDs() *IDs { return &IDs{perPrefix: true, format: "%s_%03d", n: map[string]int{}} }

// New returns the next id with prefix.
func (g *IDs) New(prefix string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := ""
	if g.perPrefix {
		key = prefix
	}
	g.n[key]++
	return fmt.Sprintf(g.format, prefix, g.n[key])
}
