package testenv

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(RunCheckingRedisKeys(m)) }

// The check after the run finds a key a test left, and removes it.
func TestKeysLeftUnderTheRunPrefixAreFound(t *testing.T) {
	client := RedisClient(t)
	ctx := context.Background()
	key := UniqueName(runPrefix + "left:")
	if err := client.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	left, err := deleteKeysUnder(ctx, client, runPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(left, []string{key}) {
		t.Fatalf("keys found under the run's prefix = %v, want [%s]", left, key)
	}
	if n, err := client.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("the key left behind still exists: %d, %v", n, err)
	}
}

func TestRedisKeyPrefixEmptiesItsKeysWhenTheTestEnds(t *testing.T) {
	client := RedisClient(t)
	ctx := context.Background()
	var prefixes []string
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			prefix := RedisKeyPrefix(t, client, "cleanup")
			prefixes = append(prefixes, prefix)
			for _, k := range []string{"a", "b"} {
				if err := client.Set(ctx, prefix+k, "v", time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if prefixes[0] == prefixes[1] || !strings.HasPrefix(prefixes[0], runPrefix) || !strings.HasPrefix(prefixes[1], runPrefix) {
		t.Fatalf("prefixes %q are not distinct prefixes under the run's %q", prefixes, runPrefix)
	}
	for _, p := range prefixes {
		keys, err := client.Keys(ctx, p+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("keys left under %s after its test ended: %v", p, keys)
		}
	}
}

// recordingTB stands in for a test whose failure must be observed rather
// than suffered.
type recordingTB struct {
	testing.TB
	failures []string
	cleanups int
}

func (r *recordingTB) Helper()                        {}
func (r *recordingTB) Fatalf(format string, _ ...any) { r.failures = append(r.failures, format) }
func (r *recordingTB) Cleanup(func())                 { r.cleanups++ }

// A prefix outside the run would escape the check after the run.
func TestDeleteKeysOnCleanupRefusesAPrefixOutsideTheRun(t *testing.T) {
	rec := &recordingTB{}
	DeleteKeysOnCleanup(rec, nil, "profilesvc-test:someone-else:")
	if len(rec.failures) != 1 || rec.cleanups != 0 {
		t.Fatalf("failures %q, cleanups %d: want the test failed and nothing scheduled", rec.failures, rec.cleanups)
	}
}
