// Package testenv owns the connections tests make to real backing services.
// Each helper skips the test when its variable (TEST_DATABASE_URL,
// TEST_REDIS_URL) is unset, so `go test ./...` passes on a bare machine and
// runs the full suites where the services exist.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisURLVariable names the variable that points tests at a Redis database.
const RedisURLVariable = "TEST_REDIS_URL"

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
	opts, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatalf("%s: %v", RedisURLVariable, err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s does not answer: %v", opts.Addr, err)
	}
	return client
}

// UniqueName returns prefix followed by random hex, so tests running at the
// same time against one shared database never touch each other's keys.
func UniqueName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}

// DeleteKeysOnCleanup removes every key under prefix when the test ends, so
// runs against a shared database leave nothing behind even for keys whose
// expiry is long.
func DeleteKeysOnCleanup(t testing.TB, client *redis.Client, prefix string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("listing test keys under %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("deleting test keys under %s: %v", prefix, err)
			}
		}
	})
}
