package conformance_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestMemoryStore(t *testing.T) {
	conformance.RunStore(t, func(*testing.T) storage.Store { return memory.New() })
}
