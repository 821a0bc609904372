//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// backend is one configuration of the service under test: a row of the
// table below. Placeholders in env values: {data} (a fresh directory),
// {addr} (the host:port the instance listens on, which an instance of a
// fleet names as its own NODE_URL), {postgres} (a fresh schema of the
// bench database), {redis}, and any other name the caller's vars give.
type backend struct {
	key, name string
	env       map[string]string
	// requires names a variable the binary must know for the row to run
	// (one that a later change adds), "" for none.
	requires string
	// webhooks says whether the webhook figures are taken on this row.
	webhooks bool
}

var backends = []backend{
	// The default on SQLite: the profile cache in the process.
	{key: "sqlite", name: "SQLite", env: map[string]string{"DATABASE_URL": "sqlite://{data}/bench.db"}, webhooks: true},
	{key: "sqlitenocache", name: "SQLite, no profile cache", env: map[string]string{"DATABASE_URL": "sqlite://{data}/bench.db", "PROFILE_CACHE": "off"}, requires: "PROFILE_CACHE"},
	{key: "pg", name: "PostgreSQL + Redis", env: map[string]string{"DATABASE_URL": "{postgres}", "REDIS_URL": "{redis}"}, webhooks: true},
	{key: "pgcache", name: "PostgreSQL + Redis, profile cache", env: map[string]string{"DATABASE_URL": "{postgres}", "REDIS_URL": "{redis}", "PROFILE_CACHE": "redis"}, requires: "PROFILE_CACHE"},
}

// commonEnv is every row's environment: logging and the rate limit off and
// quotas out of the way, so the figures are those of the request path.
var commonEnv = map[string]string{
	"JWT_SECRET":            "bench-jwt-secret-0123456789abcdef0123456789",
	"SECRET_KEY":            "bench-secret-key-0123456789abcdef0123456789",
	"RATE_LIMIT":            "off",
	"BROWSER_RUNTIME":       "none",
	"LOG_LEVEL":             "error",
	"ALLOW_PRIVATE_TARGETS": "true",
	"QUOTA_PROFILES":        "100000000",
}

func (b backend) needs(placeholder string) bool {
	for _, v := range b.env {
		if strings.Contains(v, placeholder) {
			return true
		}
	}
	return false
}

// instance is a running service of one backend and what was seeded in it.
type instance struct {
	backend
	bin  string
	env  []string
	addr string
	proc *proc
	log  string

	firstStart time.Duration // a fresh database: migrations included
	starts     []time.Duration
	idleRSS    float64
	loadRSS    float64

	jwt, apiKey string
	profiles    []string
	// A second team, so webhook figures count only the events made for
	// them, whatever the load before left in the outbox.
	hookKey string
}

// launch prepares the instance's environment and starts it repeatedly:
// once on a fresh database, then `restarts` times measured, the last of
// which keeps running.
func launch(ctx context.Context, bin, dir string, b backend, vars map[string]string, restarts int) (*instance, error) {
	in := &instance{backend: b, bin: bin, log: filepath.Join(dir, b.key+".log")}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	in.addr = addr
	data := filepath.Join(dir, b.key)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	env := map[string]string{"HTTP_ADDR": addr, "DATA_DIR": data}
	for k, v := range commonEnv {
		env[k] = v
	}
	for k, v := range b.env {
		v = strings.ReplaceAll(v, "{data}", data)
		v = strings.ReplaceAll(v, "{addr}", addr)
		for name, value := range vars {
			v = strings.ReplaceAll(v, "{"+name+"}", value)
		}
		env[k] = v
	}
	env["REDIS_KEY_PREFIX"] = vars["redisPrefix"] + b.key + ":"
	for k, v := range env {
		in.env = append(in.env, k+"="+v)
	}
	slices.Sort(in.env)
	for i := range restarts + 1 {
		if in.proc != nil {
			in.proc.stop()
		}
		t0 := time.Now()
		p, err := start(bin, []string{"serve"}, in.env, in.log)
		if err != nil {
			return nil, err
		}
		in.proc = p
		took, err := waitHealthy(ctx, p, addr, t0, time.Minute)
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		if i == 0 {
			in.firstStart = took
		} else {
			in.starts = append(in.starts, took)
		}
	}
	return in, nil
}

// settle measures the idle RSS once start-up work (migrations check,
// pools, workers) is done: when two readings half a second apart differ by
// under 0.5 MB, or after 5 s.
func (in *instance) settle() error {
	prev, err := in.proc.rssMB()
	for range 10 {
		if err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		var now float64
		now, err = in.proc.rssMB()
		if err == nil && now-prev < 0.5 && prev-now < 0.5 {
			break
		}
		prev = now
	}
	in.idleRSS = prev
	return err
}

// api calls the service's JSON API; auth is a header name and value.
func api(addr, method, path string, auth [2]string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth[0] != "" {
		req.Header.Set(auth[0], auth[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// createBody is the profile every create sends, as in profiles_test.go.
const createBody = `{"name":"bench","templateId":"tpl_chrome_win_us","proxy":null}`

// account registers a user (with a team of its own) and gives it an API
// key; it returns the access token and the key.
func (in *instance) account(email string) (jwt, key string, err error) {
	var reg struct {
		Data struct {
			AccessToken string `json:"accessToken"`
		} `json:"data"`
	}
	if err := api(in.addr, "POST", "/api/v1/auth/register", [2]string{}, map[string]any{"email": email, "password": "benchmark password", "name": "Bench"}, 201, &reg); err != nil {
		return "", "", err
	}
	jwt = reg.Data.AccessToken
	var k struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if err := api(in.addr, "POST", "/api/v1/api-keys", [2]string{"Authorization", "Bearer " + jwt}, map[string]any{"name": "bench"}, 201, &k); err != nil {
		return "", "", err
	}
	return jwt, k.Data.Key, nil
}

// seed makes the data the workloads read: an account with `profiles`
// profiles (at least a list of 50, and one per connection for
// launch+release), and the webhook team.
func (in *instance) seed(profiles int) error {
	var err error
	if in.jwt, in.apiKey, err = in.account("bench@example.com"); err != nil {
		return err
	}
	if _, in.hookKey, err = in.account("hooks@example.com"); err != nil {
		return err
	}
	for i := range profiles {
		var p struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		body := map[string]any{"name": fmt.Sprintf("seed %d", i), "templateId": "tpl_chrome_win_us", "proxy": nil}
		if err := api(in.addr, "POST", "/api/v1/profiles", [2]string{"X-API-Key", in.apiKey}, body, 201, &p); err != nil {
			return err
		}
		in.profiles = append(in.profiles, p.Data.ID)
	}
	return nil
}
