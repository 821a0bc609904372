package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/profilesvc/profilesvc/adapters/clock"
	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	webhookhttp "github.com/profilesvc/profilesvc/adapters/webhook"
	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// backend is one storage adapter the suites run against.
type backend struct {
	name string
	url  func(t *testing.T) string
}

// backends lists memory and SQLite always, and PostgreSQL when
// TEST_DATABASE_URL is set.
func backends() []backend {
	return []backend{
		{"memory", func(*testing.T) string { return "memory://" }},
		{"sqlite", func(t *testing.T) string { return testenv.SQLiteURL(t) }},
		{"postgres", func(t *testing.T) string { return testenv.PostgresURL(t) }},
	}
}

// eachBackend runs fn once per storage adapter, each with its own service.
func eachBackend(t *testing.T, fn func(t *testing.T, h *harness)) {
	eachBackendWith(t, nil, fn)
}

// eachBackendWith is eachBackend with extra fx options for every service.
func eachBackendWith(t *testing.T, extra []fx.Option, fn func(t *testing.T, h *harness)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			fn(t, start(t, options{databaseURL: b.url(t), extra: extra}))
		})
	}
}

type options struct {
	databaseURL string
	redisURL    string
	// extra fx options, applied after the harness's own.
	extra []fx.Option
	// env adds to or overrides the harness's environment.
	env map[string]string
}

// harness is one running service, booted through wiring.App's options with
// its logs captured and its clock faked.
type harness struct {
	t      *testing.T
	base   string
	logs   *observer.ObservedLogs
	clock  *clock.Fake
	client *http.Client
	// store is the service's own store, for arranging what the API cannot
	// yet (memberships of other roles) and for reading the outbox.
	store storage.Store
	// routes is the service's route table.
	routes wiring.RouteTable
	// stop stops the service (again: a no-op).
	stop func()
	// bodies keeps every response body, so tests can look for leaked secrets.
	mu     sync.Mutex
	bodies [][]byte
}

var sharedSecrets = struct{ jwt, key string }{
	jwt: "test-jwt-secret-0123456789abcdef0123456789abcdef",
	key: "test-secret-key-0123456789abcdef0123456789abcdef",
}

func start(t *testing.T, o options) *harness {
	t.Helper()
	env := map[string]string{
		"HTTP_ADDR":    "127.0.0.1:0",
		"DATA_DIR":     t.TempDir(),
		"DATABASE_URL": o.databaseURL,
		"REDIS_URL":    o.redisURL,
		"JWT_SECRET":   sharedSecrets.jwt,
		"SECRET_KEY":   sharedSecrets.key,
		"LOG_LEVEL":    "debug",
		// The suites make more requests in one minute of the fake clock
		// than the default limit allows; tests of the limit set their own.
		"RATE_LIMIT":      "1000000/1m",
		"AUTH_RATE_LIMIT": "1000000/1m",
		// Sessions are leases here; the browser suites run Chromium.
		"BROWSER_RUNTIME": "none",
	}
	for k, v := range o.env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	fake := clock.NewFake(time.Now().UTC())
	var srv *httpapi.Server
	var store storage.Store
	var routes wiring.RouteTable
	opts := append([]fx.Option{
		fx.Replace(zap.New(core)),
		fx.Decorate(func() ports.Clock { return fake }),
		fx.Decorate(offlineSender),
		fx.Populate(&srv, &store, &routes),
	}, o.extra...)
	app := fxtest.New(t, wiring.Options(cfg, opts...))
	app.RequireStart()
	h := &harness{t: t, base: "http://" + srv.Addr(), logs: logs, clock: fake, store: store, routes: routes}
	h.stop = sync.OnceFunc(app.RequireStop)
	t.Cleanup(h.stop)
	h.client = &http.Client{Transport: &validatingTransport{h: h, next: http.DefaultTransport}, Timeout: 30 * time.Second}
	return h
}

// publicReceiver names, as data only, a receiver that is neither local nor
// private: the suites create endpoints for it and expect them accepted.
const publicReceiver = "hooks.example.test"

// offlineSender is the service's webhook sender, kept from the network: it
// resolves no names (publicReceiver passes the target check as a public
// host would) and delivers only to loopback receivers, so no test traffic
// leaves the machine whatever endpoints a test creates.
func offlineSender(cfg config.Config) ports.WebhookSender {
	return offlineWebhookSender{webhookhttp.NewSender(webhookhttp.Options{
		Timeout:      cfg.WebhookTimeout,
		AllowPrivate: cfg.AllowPrivateTargets,
		Resolver: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("the test suites resolve no names")
		}},
	})}
}

type offlineWebhookSender struct{ ports.WebhookSender }

func (s offlineWebhookSender) CheckTarget(ctx context.Context, rawURL string) error {
	if u, err := url.Parse(rawURL); err == nil && u.Scheme == "https" && u.Host == publicReceiver {
		return nil
	}
	return s.WebhookSender.CheckTarget(ctx, rawURL)
}

func (s offlineWebhookSender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return ports.WebhookResponse{}, err
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err != nil || !addr.IsLoopback() {
		return ports.WebhookResponse{}, errors.New("the test suites deliver only to loopback receivers")
	}
	return s.WebhookSender.Send(ctx, r)
}

var (
	docOnce   sync.Once
	docV      validator.Validator
	docErr    error
	validated atomic.Int64
)

// validateMu serialises response validation; see RoundTrip.
var validateMu sync.Mutex

func openAPIValidator(t *testing.T) validator.Validator {
	docOnce.Do(func() {
		doc, err := libopenapi.NewDocument(httpapi.OpenAPIDocument())
		if err != nil {
			docErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			docErr = fmt.Errorf("%v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			docErr = fmt.Errorf("openapi.yaml is not a valid document: %v", verrs)
			return
		}
		docV = v
	})
	if docErr != nil {
		t.Fatalf("openapi: %v", docErr)
	}
	return docV
}

// validatingTransport checks every response the suite receives against the
// OpenAPI document and the conventions every response shares.
type validatingTransport struct {
	h    *harness
	next http.RoundTripper
}

func (vt *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := vt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	vt.h.mu.Lock()
	vt.h.bodies = append(vt.h.bodies, body)
	vt.h.mu.Unlock()
	t := vt.h.t
	where := req.Method + " " + req.URL.Path
	if resp.Header.Get("X-Request-ID") == "" {
		t.Errorf("%s: response has no X-Request-ID", where)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if known := routeKnown(req); known {
		v := openAPIValidator(t)
		// The validator renders schemas lazily and is not safe for
		// concurrent use (the race detector sees it write shared state when
		// a burst of 429s is checked at once), so one response at a time.
		validateMu.Lock()
		ok, errs := v.ValidateHttpResponse(req, resp)
		validateMu.Unlock()
		if !ok {
			for _, e := range errs {
				t.Errorf("%s -> %d does not match openapi.yaml: %s (%s) body=%s", where, resp.StatusCode, e.Message, e.Reason, truncate(body))
			}
		}
		validated.Add(1)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// routeKnown is false for the deliberately unknown paths and methods of the
// 404/405 tests, which the document cannot describe, and for the endpoints
// the instances of a fleet call among themselves, which are not the API.
func routeKnown(req *http.Request) bool {
	return req.Header.Get("X-Test-Unrouted") == ""
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	env    map[string]any
}

func (r response) data() map[string]any {
	d, _ := r.env["data"].(map[string]any)
	return d
}

func (r response) errCode() string {
	e, _ := r.env["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r response) errFields() []string {
	e, _ := r.env["error"].(map[string]any)
	var out []string
	for _, d := range asList(e["details"]) {
		m, _ := d.(map[string]any)
		out = append(out, fmt.Sprint(m["field"]))
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// req is one request of the suite.
type req struct {
	method  string
	path    string
	body    any
	rawBody []byte
	headers map[string]string
}

func (h *harness) do(r req) response {
	h.t.Helper()
	var body io.Reader
	switch {
	case r.rawBody != nil:
		body = bytes.NewReader(r.rawBody)
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			h.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(context.Background(), r.method, h.base+r.path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	resp, err := h.client.Do(hr)
	if err != nil {
		h.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.env); err != nil {
			h.t.Fatalf("%s %s: response is not JSON: %v: %s", r.method, r.path, err, raw)
		}
	}
	return out
}

func (h *harness) post(path string, body any, headers ...string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodPost, path: path, body: body, headers: pairs(headers)})
}

func (h *harness) get(path string, headers ...string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodGet, path: path, headers: pairs(headers)})
}

func pairs(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

func expect(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, truncate(r.raw))
	}
}

// account is a registered user with its tokens.
type account struct {
	email, password, name string
	userID, teamID        string
	access, refresh       string
}

var accountSeq atomic.Int64

func (h *harness) register(t *testing.T) account {
	t.Helper()
	n := accountSeq.Add(1)
	a := account{email: fmt.Sprintf("user%d@example.com", n), password: fmt.Sprintf("correct horse battery %d", n), name: fmt.Sprintf("User %d", n)}
	r := h.post("/api/v1/auth/register", map[string]any{"email": a.email, "password": a.password, "name": a.name})
	expect(t, r, http.StatusCreated)
	d := r.data()
	a.userID = str(d["user"].(map[string]any)["id"])
	a.teamID = str(d["team"].(map[string]any)["id"])
	a.access, a.refresh = str(d["accessToken"]), str(d["refreshToken"])
	return a
}

// rawDo sends a request from any goroutine (no t.Fatal) and returns the
// status, or 0 when the request failed; the response is still checked
// against the OpenAPI document. body is JSON, or "" for none.
func (h *harness) rawDo(method, path, body string, headers ...string) int {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		return 0
	}
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range pairs(headers) {
		hr.Header.Set(k, v)
	}
	resp, err := h.client.Do(hr)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
