// Package testenv owns the connections tests make to real backing services.
// Each helper skips the test when its variable (TEST_DATABASE_URL,
// TEST_REDIS_URL) is unset, so `go test ./...` passes on a bare machine and
// runs the full suites where the services exist.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisURLVariable names the variable that points tests at a Redis database.
const RedisURLVariable = "TEST_REDIS_URL"

// runPrefix namespaces every Redis key one test process writes: the check
// after the run (RunCheckingRedisKeys) looks for leftovers under it without
// touching the keys of other runs that share the database.
var runPrefix = UniqueName("profilesvc-test:") + ":"

// RedisClient returns a client for TEST_REDIS_URL, closed when the test ends.
// It skips the test when the variable is unset and fails it when the URL is
// set but Redis does not answer: a configured service that is down is a
// failure, not a reason to pass.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	raw := os.Getenv(RedisURLVariable)
	if raw == "" {
		t.Skip(RedisURLVariable + " is not set")
	}
	client, err := dialRedis(raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func dialRedis(raw string) (*redis.Client, error) {
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RedisURLVariable, err)
	}
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", opts.Addr, err)
	}
	return client, nil
}

// UniqueName returns prefix followed by random hex, so tests running at the
// same time against one shared database never touch each other's keys.
func UniqueName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}

// RedisKeyPrefix returns the prefix for the keys of one test or suite:
// unique, under the run's prefix, and emptied when t ends. name only makes
// the keys readable when a run leaves some behind.
func RedisKeyPrefix(t testing.TB, client *redis.Client, name string) string {
	t.Helper()
	prefix := UniqueName(runPrefix+name+":") + ":"
	DeleteKeysOnCleanup(t, client, prefix)
	return prefix
}

// DeleteKeysOnCleanup removes every key under prefix when the test ends, so
// runs against a shared database leave nothing behind even for keys whose
// expiry is long. prefix must lie under the run's prefix (RedisKeyPrefix
// makes one), or the check after the run could not see what a test left.
func DeleteKeysOnCleanup(t testing.TB, client *redis.Client, prefix string) {
	t.Helper()
	if !strings.HasPrefix(prefix, runPrefix) {
		t.Fatalf("Redis key prefix %q is outside this run's %q: make it with RedisKeyPrefix", prefix, runPrefix)
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := deleteKeysUnder(ctx, client, prefix); err != nil {
			t.Errorf("deleting test keys under %s: %v", prefix, err)
		}
	})
}

// deleteKeysUnder deletes the keys under prefix and returns them.
func deleteKeysUnder(ctx context.Context, client *redis.Client, prefix string) ([]string, error) {
	// The prefixes are ours (letters, digits, ':', '-'), so none holds a
	// character SCAN's pattern would read as a wildcard.
	iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	if len(keys) > 0 {
		if err := client.Del(ctx, keys...).Err(); err != nil {
			return nil, fmt.Errorf("deleting %d keys: %w", len(keys), err)
		}
	}
	return keys, nil
}

// RunCheckingRedisKeys runs a package's tests, then fails the run when a
// key is left under the run's prefix: a test that wrote keys it did not
// clean up fails here even if its own assertions passed. It deletes what
// it finds, so one failing run does not leave keys to the next. Call it
// from TestMain: os.Exit(testenv.RunCheckingRedisKeys(m)).
func RunCheckingRedisKeys(m *testing.M) int {
	code := m.Run()
	raw := os.Getenv(RedisURLVariable)
	if raw == "" {
		return code
	}
	client, err := dialRedis(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checking for Redis keys left by the tests:", err)
		return 1
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, err := deleteKeysUnder(ctx, client, runPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checking for Redis keys left by the tests:", err)
		return 1
	}
	if len(left) > 0 {
		shown := left[:min(len(left), 20)]
		fmt.Fprintf(os.Stderr, "FAIL: the tests left %d Redis keys under %s (now deleted), among them: %s\n", len(left), runPrefix, strings.Join(shown, " "))
		return 1
	}
	return code
}
