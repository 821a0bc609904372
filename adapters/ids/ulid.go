// Package ids owns the identifier generator: prefixed, lower-case ULIDs
// ("usr_01j...") that sort by creation time, so lists ordered by id are
// ordered by age and the outbox can be read in id order.
package ids

import (
	"crypto/rand"
	"errors"
	"strings"
	"sync"

	"github.com/oklog/ulid/v2"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IDs = (*ULID)(nil)

// ULID makes prefixed ULIDs whose timestamps come from a ports.Clock. It is
// safe for concurrent use.
type ULID struct {
	clock ports.Clock

	mu sync.Mutex
	// entropy increments within one millisecond so that ids made in the same
	// millisecond still sort in the order they were made.
	entropy *ulid.MonotonicEntropy
	// lastMS keeps ids increasing even when the clock steps backwards (NTP
	// adjustment, a fake clock set to the past).
	lastMS uint64
}

// NewULID returns a generator that stamps ids with c's time and draws their
// random part from crypto/rand, so ids cannot be guessed from one another.
func NewULID(c ports.Clock) *ULID {
	return &ULID{clock: c, entropy: ulid.Monotonic(rand.Reader, 0)}
}

// New returns prefix + "_" + a new lower-case ULID.
func (g *ULID) New(prefix string) string {
	id := g.next()
	s := strings.ToLower(id.String())
	if prefix == "" {
		return s
	}
	return prefix + "_" + s
}

func (g *ULID) next() ulid.ULID {
	ms := ulid.Timestamp(g.clock.Now())
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms < g.lastMS {
		ms = g.lastMS
	}
	for {
		id, err := ulid.New(ms, g.entropy)
		if err == nil {
			g.lastMS = ms
			return id
		}
		if errors.Is(err, ulid.ErrMonotonicOverflow) {
			// The millisecond's entropy space is used up; borrowing the next
			// millisecond keeps ids unique and ordered.
			ms++
			continue
		}
		// crypto/rand does not fail on supported platforms; an id that is not
		// unique would corrupt data, so refuse to go on.
		panic("ids: reading entropy: " + err.Error())
	}
}
