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
	const stalled = 600 // two file descriptors each, client and server side
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
