package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// RunCacheWithoutBackend checks a cache whose backend does not answer (it
// refuses connections or never replies) and that must degrade rather than
// fail: every read is a miss, every write and delete succeeds without
// reaching the backend, and none returns an error, so callers read their
// store.
func RunCacheWithoutBackend(t *testing.T, c ports.Cache) {
	ctx := context.Background()
	for i := range 3 {
		if err := c.Set(ctx, "down:k", []byte("v"), time.Minute); err != nil {
			t.Fatalf("Set %d with the backend down: %v", i, err)
		}
		v, hit, err := c.Get(ctx, "down:k")
		if err != nil || hit || v != nil {
			t.Fatalf("Get %d with the backend down = %q, %v, %v; want a miss without error", i, v, hit, err)
		}
	}
	if err := c.Delete(ctx, "down:k"); err != nil {
		t.Fatalf("Delete with the backend down: %v; want it kept for when the backend is back", err)
	}
	if _, hit, err := c.Get(ctx, "down:k"); hit || err != nil {
		t.Fatalf("Get after a Delete with the backend down: hit %v, %v", hit, err)
	}
	if err := c.Set(ctx, "down:k", []byte("v"), 0); err == nil {
		t.Fatal("Set with a zero ttl succeeded with the backend down; it is refused whatever the backend")
	}
}
