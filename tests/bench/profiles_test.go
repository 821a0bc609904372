// Package bench measures the service end to end over HTTP: the whole fx app
// on each storage adapter, driven through its API as clients drive it.
package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

type service struct {
	base   string
	client *http.Client
	token  string
}

// boot starts the service on databaseURL with logging off, so the figures
// are the service's and not the log encoder's.
func boot(b *testing.B, databaseURL string, extraEnv ...string) *service {
	b.Helper()
	env := map[string]string{
		"HTTP_ADDR": "127.0.0.1:0", "DATA_DIR": b.TempDir(), "DATABASE_URL": databaseURL,
		"JWT_SECRET": "bench-jwt-secret-0123456789abcdef0123456789", "SECRET_KEY": "bench-secret-key-0123456789abcdef0123456789",
		// One caller makes every request: the figures are the service's,
		// not those of its rate limit.
		"RATE_LIMIT": "off",
		// Leases only: the browser benchmarks start Chromium themselves.
		"BROWSER_RUNTIME": "none",
	}
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env[extraEnv[i]] = extraEnv[i+1]
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	var srv *httpapi.Server
	app := fx.New(wiring.Options(cfg, fx.Replace(zap.NewNop()), fx.Populate(&srv)))
	if err := app.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Stop(context.Background()) })
	s := &service{base: "http://" + srv.Addr(), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var reg struct {
		Data struct {
			AccessToken string `json:"accessToken"`
		} `json:"data"`
	}
	s.call(b, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "bench@example.com", "password": "benchmark password", "name": "Bench"}, http.StatusCreated, &reg)
	s.token = reg.Data.AccessToken
	return s
}

func (s *service) call(b *testing.B, method, path string, body any, want int, out any) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d: %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatal(err)
		}
	}
}

// send sends a request from any goroutine (no b.Fatal) and returns the
// status, 0 when the request failed. body is JSON, or "" for none.
func (s *service) send(method, path, body string) int {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

type idOnly struct {
	Data struct {
		ID string `json:"id"`
	} `json:"data"`
}

// backends names each store with a function that returns a fresh, empty
// database for one run of a benchmark.
func backends() map[string]func(b *testing.B) string {
	m := map[string]func(b *testing.B) string{
		"memory": func(*testing.B) string { return "memory://" },
		"sqlite": func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
	}
	if os.Getenv(testenv.DatabaseURLVariable) != "" {
		m["postgres"] = func(b *testing.B) string { return testenv.PostgresURL(b) }
	}
	return m
}

// BenchmarkProfiles measures the hot paths of automation clients: read a
// profile, list a page, create one, and a launch/release cycle.
func BenchmarkProfiles(b *testing.B) {
	for name, url := range backends() {
		b.Run(name, func(b *testing.B) {
			s := boot(b, url(b))
			var p idOnly
			for i := range 200 {
				s.call(b, http.MethodPost, "/api/v1/profiles", map[string]any{"name": fmt.Sprintf("seed %d", i), "templateId": "tpl_chrome_win_us", "proxy": nil}, http.StatusCreated, &p)
			}
			id := p.Data.ID
			b.Run("read", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if status := s.send(http.MethodGet, "/api/v1/profiles/"+id, ""); status != http.StatusOK {
							b.Errorf("read: status %d", status)
							return
						}
					}
				})
			})
			b.Run("list50", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.call(b, http.MethodGet, "/api/v1/profiles?limit=50", nil, http.StatusOK, nil)
				}
			})
			b.Run("create", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.call(b, http.MethodPost, "/api/v1/profiles", map[string]any{"name": "bench", "templateId": "tpl_chrome_win_us", "proxy": nil}, http.StatusCreated, nil)
				}
			})
			b.Run("launch_release", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.call(b, http.MethodPost, "/api/v1/profiles/"+id+"/launch", nil, http.StatusOK, nil)
					s.call(b, http.MethodPost, "/api/v1/profiles/"+id+"/release", nil, http.StatusOK, nil)
				}
			})
		})
	}
}
