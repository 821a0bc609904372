package api_test

import (
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// refusedRedisURL is a loopback Redis URL on a port nothing listens on.
func refusedRedisURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "redis://" + addr + "/0"
}

// blackholedRedis starts a service whose Redis is reached through a proxy,
// blackholed once the service has started.
func blackholedRedis(t *testing.T) (*harness, *testenv.Proxy) {
	raw := os.Getenv(testenv.RedisURLVariable)
	if raw == "" {
		t.Skip(testenv.RedisURLVariable + " is not set")
	}
	client := testenv.RedisClient(t)
	proxy := testenv.StartProxy(t, client.Options().Addr)
	prefix := testenv.RedisKeyPrefix(t, client, "faults")
	h := start(t, options{databaseURL: "memory://", redisURL: "redis://" + proxy.Addr() + "/0",
		env: map[string]string{"REDIS_KEY_PREFIX": prefix}})
	return h, proxy
}

// redisDownChecks: with Redis unreachable, what needs no Redis works, the
// cache and the limiter do without it, and /readyz keeps the instance in
// the balancer while naming what is degraded.
func redisDownChecks(t *testing.T, h *harness) {
	a := h.register(t)
	key := h.apiKey(t, a)
	expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}), http.StatusOK)
	expect(t, h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted)
	expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusOK)
	expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)
	r := h.get("/readyz")
	expect(t, r, http.StatusOK)
	if d := r.data(); d["status"] != "degraded" || !strings.Contains(string(r.raw), `"cache":"degraded"`) {
		t.Fatalf("readyz with Redis down: %s, want status degraded naming the cache", r.raw)
	}
}

func TestRedisRefusedDegradesInsteadOfFailing(t *testing.T) {
	h := start(t, options{databaseURL: "memory://", redisURL: refusedRedisURL(t)})
	redisDownChecks(t, h)
}

func TestRedisBlackholedDegradesInsteadOfFailing(t *testing.T) {
	h, proxy := blackholedRedis(t)
	a := h.register(t)
	key := h.apiKey(t, a)
	expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusOK)
	proxy.Blackhole()
	redisDownChecks(t, h)
	proxy.Forward()
}
