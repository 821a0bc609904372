package api_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
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
	// Deleting a key cannot wait for Redis, and the deleted key stops working.
	spare := h.apiKey(t, a)
	id := "key_" + strings.Split(strings.TrimPrefix(spare, "psvc_"), "_")[0]
	expect(t, h.get("/api/v1/me", "X-API-Key", spare), http.StatusOK)
	expect(t, h.delete("/api/v1/api-keys/"+id, bearer(a.access)...), http.StatusNoContent)
	expect(t, h.get("/api/v1/me", "X-API-Key", spare), http.StatusUnauthorized)
	r := h.get("/readyz")
	expect(t, r, http.StatusOK)
	if d := r.data(); d["status"] != "degraded" || !strings.Contains(string(r.raw), `"cache":"degraded"`) {
		t.Fatalf("readyz with Redis down: %s, want status degraded naming the cache", r.raw)
	}
}

func TestRedisRefusedDegradesInsteadOfFailing(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", redisURL: refusedRedisURL(t)})
	redisDownChecks(t, h)
}

func TestRedisBlackholedDegradesInsteadOfFailing(t *testing.T) {
	t.Parallel()
	h, proxy := blackholedRedis(t)
	a := h.register(t)
	key := h.apiKey(t, a)
	expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusOK)
	proxy.Blackhole()
	redisDownChecks(t, h)
	proxy.Forward()
}

// proxiedPostgres starts a service whose PostgreSQL is reached through a
// proxy the test controls, with env added to the service's.
func proxiedPostgres(t *testing.T, env map[string]string) (*harness, *testenv.Proxy) {
	u, err := url.Parse(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, u.Host)
	u.Host = proxy.Addr()
	return start(t, options{databaseURL: u.String(), env: env}), proxy
}

// quickDo sends one request with its own deadline and reports the status,
// or 0 with the error when no answer came in time.
func quickDo(h *harness, wait time.Duration, method, path string, headers ...string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, h.base+path, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range pairs(headers) {
		r.Header.Set(k, v)
	}
	resp, err := h.client.Do(r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		return resp.StatusCode, errors.New("503 without Retry-After")
	}
	return resp.StatusCode, nil
}

func TestPostgresStalledAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	h, proxy := proxiedPostgres(t, map[string]string{"DATABASE_QUERY_TIMEOUT": "300ms"})
	a := h.register(t)
	key := h.apiKey(t, a)
	expect(t, h.get("/api/v1/profiles", "X-API-Key", key), http.StatusOK)

	proxy.Blackhole()
	for _, creds := range [][]string{{"X-API-Key", key}, bearer(a.access)} {
		// Well within the harness's patience, well beyond the query timeout:
		// a request that waits for the stall fails here, not by hanging.
		status, err := quickDo(h, 5*time.Second, http.MethodGet, "/api/v1/profiles", creds...)
		if err != nil || status != http.StatusServiceUnavailable {
			t.Fatalf("list while PostgreSQL stalls: %d, %v; want 503 with Retry-After", status, err)
		}
	}
	proxy.Forward()
	poll.Until(t, "the service to use PostgreSQL again", func() bool {
		status, _ := quickDo(h, 5*time.Second, http.MethodGet, "/api/v1/profiles", "X-API-Key", key)
		return status == http.StatusOK
	})
}

func TestPostgresStoppedAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	h, proxy := proxiedPostgres(t, nil)
	a := h.register(t)
	expect(t, h.get("/api/v1/profiles", bearer(a.access)...), http.StatusOK)

	proxy.Stop()
	status, err := quickDo(h, 5*time.Second, http.MethodGet, "/api/v1/profiles", bearer(a.access)...)
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("list while PostgreSQL is stopped: %d, %v; want 503 with Retry-After", status, err)
	}
	if r := h.get("/readyz"); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.raw), `"store":"failing"`) {
		t.Fatalf("readyz while PostgreSQL is stopped: %d %s", r.status, r.raw)
	}
	proxy.Forward()
	poll.Until(t, "the service to use PostgreSQL again", func() bool {
		status, _ := quickDo(h, 5*time.Second, http.MethodGet, "/api/v1/profiles", bearer(a.access)...)
		return status == http.StatusOK
	})
}
