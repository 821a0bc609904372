package wiring

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/config"
)

func TestRedisWaitsAreBoundedUnlessTheURLSaysOtherwise(t *testing.T) {
	t.Parallel()
	cfg := config.Config{RedisURL: "redis://127.0.0.1:6379/0", RedisTimeout: 250 * time.Millisecond}
	o, err := redisOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]time.Duration{"dial": o.DialTimeout, "read": o.ReadTimeout, "write": o.WriteTimeout, "pool": o.PoolTimeout} {
		if got != 250*time.Millisecond {
			t.Errorf("%s timeout %s, want REDIS_TIMEOUT's 250ms", name, got)
		}
	}
	if o.MaxRetries != -1 || o.DialerRetries != 1 {
		t.Errorf("retries: commands %d, dials %d; want none (-1) and a single dial", o.MaxRetries, o.DialerRetries)
	}

	cfg.RedisURL = "redis://127.0.0.1:6379/0?read_timeout=2s&max_retries=2"
	if o, err = redisOptions(cfg); err != nil {
		t.Fatal(err)
	}
	if o.ReadTimeout != 2*time.Second || o.MaxRetries != 2 || o.DialTimeout != 250*time.Millisecond {
		t.Errorf("URL parameters: read %s, retries %d, dial %s; want the URL's 2s and 2, REDIS_TIMEOUT for the rest", o.ReadTimeout, o.MaxRetries, o.DialTimeout)
	}
}
