package conformance_test

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/idempotency"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func TestLocalIdempotencyStore(t *testing.T) {
	conformance.RunIdempotencyStore(t, func(*testing.T) (ports.IdempotencyStore, func(time.Duration)) {
		c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		return idempotency.NewLocal(c), c.Advance
	})
}

func TestRedisIdempotencyStore(t *testing.T) {
	client := testenv.RedisClient(t) // skips the suite when TEST_REDIS_URL is unset
	prefix := testenv.RedisKeyPrefix(t, client, "idempotency")
	conformance.RunIdempotencyStore(t, func(t *testing.T) (ports.IdempotencyStore, func(time.Duration)) {
		return idempotency.NewRedis(testenv.RedisClient(t), prefix), nil
	})
}
