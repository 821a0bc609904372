package api_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallPatience bounds every wait of the stalled-connection tests: far
// beyond the read timeout they configure, so a server that never gives up
// fails the test instead of hanging it.
const stallPatience = 10 * time.Second

// stalledRequest is the head of a request whose headers promise a body of
// 100 bytes, followed by the first 10 of them; the rest never comes.
func stalledRequest(path string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 100\r\n", path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b.WriteString("\r\n{\"email\":\"")
	return b.String()
}

// stall opens a connection to the service and sends request, then nothing.
func stall(h *harness, request string) (net.Conn, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(stallPatience)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if _, err := io.WriteString(conn, request); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// awaitHangUp reads whatever the server answers until it closes the
// connection, and returns that answer's status (0 when it closed without
// one). It fails when the connection is still open after stallPatience.
func awaitHangUp(conn net.Conn) (int, error) {
	defer func() { _ = conn.Close() }()
	in := bufio.NewReader(conn)
	status := 0
	if resp, err := http.ReadResponse(in, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, fmt.Errorf("no answer and still connected after %s", stallPatience)
	}
	// Whatever the answer, the rest of the promised body never comes: the
	// server must hang up rather than wait for it.
	for {
		_, err := in.ReadByte()
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			return status, fmt.Errorf("still connected after %s", stallPatience)
		default:
			return status, nil // EOF or reset: the server hung up
		}
	}
}

func TestStalledBodyIsCutOffOnEveryPath(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"HTTP_READ_TIMEOUT": "300ms"}})
	a := h.register(t)
	cases := map[string]struct {
		request string
		status  int
	}{
		// The handler reads the body and its read fails at the deadline.
		"authenticated":             {stalledRequest("/api/v1/profiles", "Authorization", "Bearer "+a.access), http.StatusBadRequest},
		"authenticated, idempotent": {stalledRequest("/api/v1/profiles", "Authorization", "Bearer "+a.access, "Idempotency-Key", "stalled-1"), http.StatusBadRequest},
		"unauthenticated route":     {stalledRequest("/api/v1/auth/login"), http.StatusBadRequest},
		// Nothing reads the body: the answer goes out at once, and then
		// the server must not wait for the rest of the body forever.
		"refused before reading": {stalledRequest("/api/v1/profiles"), http.StatusUnauthorized},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			conn, err := stall(h, c.request)
			if err != nil {
				t.Fatal(err)
			}
			status, err := awaitHangUp(conn)
			if err != nil {
				t.Fatal(err)
			}
			if status != c.status {
				t.Fatalf("answer %d before hanging up, want %d", status, c.status)
			}
		})
	}
}

func TestManyStalledConnectionsDoNotStopTheService(t *testing.T) {
	t.Parallel()
	// Each stalled connection takes two file descriptors in this process,
	// client and server side; the service needs a few hundred of its own.
	stalled := 600
	if limit := openFileLimit(); limit > 0 && 2*stalled+300 > limit {
		stalled = (limit - 300) / 2
		t.Logf("open file limit %d: %d stalled connections", limit, stalled)
	}
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"HTTP_READ_TIMEOUT": "2s"}})
	conns := make([]net.Conn, 0, stalled)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for i := range stalled {
		c, err := stall(h, stalledRequest("/api/v1/auth/login"))
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}

	r := h.get("/healthz")
	expect(t, r, http.StatusOK)

	var wg sync.WaitGroup
	errs := make(chan error, stalled)
	for _, c := range conns {
		wg.Go(func() {
			if _, err := awaitHangUp(c); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if n := len(errs); n > 0 {
		t.Fatalf("%d of %d stalled connections were kept open; first: %v", n, stalled, <-errs)
	}
	expect(t, h.get("/healthz"), http.StatusOK)
}

// badInput is one request that carries a NUL, invalid UTF-8 or a body the
// strict decoder refuses, and the field the answer must name.
type badInput struct {
	method, path string
	body         string // raw JSON, or "" for none
	field        string
	auth         bool
	// idempotencyKey, when set, sends the request with that key, so the
	// body goes through the idempotency middleware and its store first.
	idempotencyKey string
}

func badInputs(ids map[string]string) map[string]badInput {
	return map[string]badInput{
		// Query parameters, on every kind of list.
		"profiles query":     {method: "GET", path: "/api/v1/profiles?q=a%00b", field: "q", auth: true},
		"profiles cursor":    {method: "GET", path: "/api/v1/profiles?cursor=prf_%00", field: "cursor", auth: true},
		"profiles tag utf-8": {method: "GET", path: "/api/v1/profiles?tag=%ff%fe", field: "tag", auth: true},
		"members cursor":     {method: "GET", path: "/api/v1/teams/members?cursor=mem_a%00", field: "cursor", auth: true},
		"webhooks cursor":    {method: "GET", path: "/v1/webhooks?cursor=whk_%00", field: "cursor", auth: true},
		"deliveries status":  {method: "GET", path: "/v1/webhooks/" + ids["webhook"] + "/deliveries?status=fail%00ed", field: "status", auth: true},
		"api keys limit":     {method: "GET", path: "/api/v1/api-keys?limit=1%00", field: "limit", auth: true},
		// Path ids.
		"profile id":       {method: "GET", path: "/api/v1/profiles/prf_%00", field: "id", auth: true},
		"profile id utf-8": {method: "GET", path: "/api/v1/profiles/prf_%c3%28", field: "id", auth: true},
		"member id":        {method: "PATCH", path: "/api/v1/teams/members/mem_%00", body: `{"role":"admin"}`, field: "id", auth: true},
		"webhook id":       {method: "GET", path: "/v1/webhooks/whk_%00", field: "id", auth: true},
		"delivery id":      {method: "POST", path: "/v1/webhooks/" + ids["webhook"] + "/deliveries/dlv_%00/retry", field: "deliveryId", auth: true},
		"api key id":       {method: "DELETE", path: "/api/v1/api-keys/key_%00", field: "id", auth: true},
		"template id":      {method: "GET", path: "/api/v1/templates/tpl_%00", field: "id", auth: true},
		// Body fields, NUL escaped (a raw NUL is malformed JSON).
		"profile name":        {method: "POST", path: "/api/v1/profiles", body: `{"name":"a\u0000b","templateId":"tpl_chrome_win_us"}`, field: "name", auth: true},
		"profile tag":         {method: "POST", path: "/api/v1/profiles", body: `{"name":"ok","templateId":"tpl_chrome_win_us","tags":["x","y\u0000"]}`, field: "tags[1]", auth: true},
		"profile fingerprint": {method: "PATCH", path: "/api/v1/profiles/" + ids["profile"], body: `{"fingerprint":{"locale":"en\u0000"}}`, field: "fingerprint.locale", auth: true},
		"invite email":        {method: "POST", path: "/api/v1/teams/invite", body: `{"email":"a\u0000@example.com","role":"member"}`, field: "email", auth: true},
		"accept token":        {method: "POST", path: "/api/v1/teams/invitations/accept", body: `{"token":"\u0000"}`, field: "token", auth: true},
		"webhook url":         {method: "POST", path: "/v1/webhooks", body: `{"url":"http://127.0.0.1:1/\u0000","events":["*"],"secret":"whsec-0123456789abcdef0123456789abcdef"}`, field: "url", auth: true},
		"webhook event":       {method: "POST", path: "/v1/webhooks/" + ids["webhook"] + "/test", body: `{"event_type":"profile.created\u0000"}`, field: "event_type", auth: true},
		"api key name":        {method: "POST", path: "/api/v1/api-keys", body: `{"name":"k\u0000"}`, field: "name", auth: true},
		"login email":         {method: "POST", path: "/api/v1/auth/login", body: `{"email":"a\u0000@example.com","password":"whatever-it-is"}`, field: "email"},
		"register name":       {method: "POST", path: "/api/v1/auth/register", body: `{"email":"nul@example.com","password":"a long enough password","name":"N\u0000"}`, field: "name"},
		"forgot email":        {method: "POST", path: "/api/v1/auth/forgot-password", body: `{"email":"\u0000"}`, field: "email"},
		"refresh token":       {method: "POST", path: "/api/v1/auth/refresh", body: `{"refreshToken":"x\u0000"}`, field: "refreshToken"},
		"reset token":         {method: "POST", path: "/api/v1/auth/reset-password", body: `{"token":"\u0000","password":"a long enough password"}`, field: "token"},
		"name with NUL":       {method: "POST", path: "/api/v1/auth/login", body: "{\"email\\u0000\":\"a@example.com\",\"password\":\"whatever-it-is\"}", field: `email\x00`},
		// Invalid UTF-8, raw and as a lone surrogate escape.
		"login raw utf-8":      {method: "POST", path: "/api/v1/auth/login", body: "{\"email\":\"a\xff@example.com\",\"password\":\"whatever-it-is\"}", field: "email"},
		"profile surrogate":    {method: "POST", path: "/api/v1/profiles", body: `{"name":"a\ud800b","templateId":"tpl_chrome_win_us"}`, field: "name", auth: true},
		"idempotent raw utf-8": {method: "POST", path: "/api/v1/profiles", body: "{\"name\":\"a\xffb\",\"templateId\":\"tpl_chrome_win_us\"}", field: "name", auth: true, idempotencyKey: "bad-utf8"},
		"idempotent NUL":       {method: "POST", path: "/api/v1/profiles", body: `{"name":"a\u0000","templateId":"tpl_chrome_win_us"}`, field: "name", auth: true, idempotencyKey: "bad-nul"},
		"webhook raw utf-8":    {method: "POST", path: "/v1/webhooks", body: "{\"url\":\"http://127.0.0.1:1/\xc3\x28\",\"events\":[\"*\"],\"secret\":\"0123456789abcdef0123\"}", field: "url", auth: true},
		// Names match exactly, once.
		"name in another case": {method: "POST", path: "/api/v1/auth/login", body: `{"Email":"a@example.com","password":"whatever-it-is"}`, field: "Email"},
		"nested name case":     {method: "PATCH", path: "/api/v1/profiles/" + ids["profile"], body: `{"fingerprint":{"Locale":"en-GB"}}`, field: "fingerprint.Locale", auth: true},
		"duplicate name":       {method: "POST", path: "/api/v1/auth/login", body: `{"email":"a@example.com","email":"b@example.com","password":"whatever-it-is"}`, field: "email"},
		"duplicate nested":     {method: "POST", path: "/api/v1/profiles", body: `{"name":"ok","templateId":"tpl_chrome_win_us","fingerprint":{"screen":{"width":800,"width":900,"height":600}}}`, field: "fingerprint.screen.width", auth: true},
		"duplicate secret":     {method: "POST", path: "/v1/webhooks", body: `{"url":"http://127.0.0.1:1/","events":["*"],"secret":"whsec-0123456789abcdef0123456789abcdef","secret":"whsec-0123456789abcdef0123456789abcdef"}`, field: "secret", auth: true},
	}
}

func TestBadInputIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			badInputOn(t, start(t, options{databaseURL: b.url(t), env: map[string]string{"ALLOW_PRIVATE_TARGETS": "true"}}))
		})
	}
}

func badInputOn(t *testing.T, h *harness) {
	a := h.register(t)
	auth := bearer(a.access)
	p := h.post("/api/v1/profiles", map[string]any{"name": "p", "templateId": "tpl_chrome_win_us"}, auth...)
	expect(t, p, http.StatusCreated)
	w := h.post("/v1/webhooks", map[string]any{"url": "http://127.0.0.1:1/in", "events": []string{"team.member_added"}, "secret": webhookSecret}, auth...)
	expect(t, w, http.StatusCreated)
	ids := map[string]string{"profile": str(p.data()["id"]), "webhook": str(w.data()["id"])}
	for name, c := range badInputs(ids) {
		t.Run(name, func(t *testing.T) {
			r := req{method: c.method, path: c.path, headers: map[string]string{}}
			if c.body != "" {
				r.rawBody = []byte(c.body)
			}
			if c.auth {
				r.headers["Authorization"] = "Bearer " + a.access
			}
			if c.idempotencyKey != "" {
				r.headers["Idempotency-Key"] = c.idempotencyKey
			}
			got := h.do(r)
			if got.status != http.StatusBadRequest && got.status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 400 or 422: %s", got.status, truncate(got.raw))
			}
			if fields := got.errFields(); len(fields) != 1 || fields[0] != c.field {
				t.Fatalf("fields %q, want [%q]: %s", fields, c.field, truncate(got.raw))
			}
		})
	}
}
