package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/domain"
)

// patience bounds every wait in these tests. It is far beyond the read
// timeouts they configure, so a server that never gives up fails the test
// instead of hanging the suite.
const patience = 10 * time.Second

// readTimeout is the server's read timeout in these tests. It runs from
// when the server starts reading the connection, so it must also cover how
// late a loaded machine (the race detector, every package's tests at once
// on 2 cores) lets the test write its request after the dial: at 50 ms a
// server once gave up on a request that had not arrived yet, and its
// handler never ran.
const readTimeout = time.Second

// bodyServer serves, through NewServer with the read timeout given, one
// handler that reads the body with readBody, on loopback, and reports what
// the read returned.
func bodyServer(t *testing.T, readTimeout time.Duration, afterRead func(*http.Request) error) (addr string, results <-chan error) {
	t.Helper()
	reads := make(chan error, 1)
	srv := NewServer("127.0.0.1:0", HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, err := readBody(w, r)
		reads <- err
		if err != nil {
			return err
		}
		if err := afterRead(r); err != nil {
			return err
		}
		writeNoContent(w)
		return nil
	}), zap.NewNop(), time.Second, Timeouts{Read: readTimeout})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv.Addr(), reads
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

func waitForRead(t *testing.T, reads <-chan error) error {
	t.Helper()
	select {
	case err := <-reads:
		return err
	case <-time.After(patience):
		t.Fatalf("the handler was still reading the body after %s", patience)
		return nil
	}
}

func TestStalledBodyIsCutOffAtTheDeadline(t *testing.T) {
	t.Parallel()
	addr, reads := bodyServer(t, readTimeout, func(*http.Request) error { return nil })
	conn, in := dial(t, addr)
	// The headers promise 100 bytes; 10 arrive, then nothing.
	if _, err := io.WriteString(conn, "POST /profiles HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":\"a"); err != nil {
		t.Fatal(err)
	}

	if err := waitForRead(t, reads); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read returned %v, want the read deadline", err)
	}
	// The client still gets an answer, although the rest of the body never
	// comes: the server must not wait for it before replying.
	resp, err := http.ReadResponse(in, nil)
	if err != nil {
		t.Fatalf("no response to a stalled body: %v", err)
	}
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 400 || env.Error == nil || env.Error.Code != "bad_request" || env.Error.Message != "request body could not be read" {
		t.Fatalf("answer %d %+v", resp.StatusCode, env.Error)
	}
	// What is left of the body must not be read as the next request.
	if _, err := in.ReadByte(); err != io.EOF {
		t.Fatalf("connection kept open after a stalled body: %v", err)
	}
}

func TestLongHandlerOutlivesTheBodyDeadline(t *testing.T) {
	t.Parallel()
	// net/http keeps reading the connection while the handler runs; a read
	// deadline left behind would fail that read and cancel the request. The
	// handler waits well beyond the deadline before it answers.
	for name, request := range map[string]string{
		"body":    "POST /profiles HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"name\":\"a\"}",
		"no body": "POST /profiles/prf_1/release HTTP/1.1\r\nHost: api\r\nContent-Length: 0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, reads := bodyServer(t, readTimeout, func(r *http.Request) error {
				select {
				case <-r.Context().Done():
					return errors.New("request cancelled after its body was read")
				case <-time.After(2 * readTimeout):
					return nil
				}
			})
			conn, in := dial(t, addr)
			if _, err := io.WriteString(conn, request); err != nil {
				t.Fatal(err)
			}
			if err := waitForRead(t, reads); err != nil {
				t.Fatalf("complete body: %v", err)
			}
			resp, err := http.ReadResponse(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d, want 204", resp.StatusCode)
			}
		})
	}
}

func TestJSONAndIdempotencyRefuseTheSameBodies(t *testing.T) {
	t.Parallel()
	decode := HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		var in struct{}
		return decodeJSON(w, r, &in)
	})
	// The middleware refuses the body itself, before the idempotency
	// service (none here) or the handler is reached.
	idempotent := Idempotent(nil)(HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		t.Error("Idempotent passed on a body over the limit")
		return nil
	}))
	for name, h := range map[string]http.Handler{"decodeJSON": decode, "Idempotent": idempotent} {
		for _, length := range []int64{maxBodyBytes + 1, -1} {
			r := httptest.NewRequest(http.MethodPost, "/profiles", strings.NewReader(`{"name":"`+strings.Repeat("a", maxBodyBytes)+`"}`))
			r.ContentLength = length
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", "k1")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			env := expectError(t, w, http.StatusRequestEntityTooLarge, "payload_too_large")
			if env.Error.Message != "request body must not exceed 1048576 bytes" {
				t.Errorf("%s, length %d: message %q", name, length, env.Error.Message)
			}
		}
	}
}

func TestStalledBodyNobodyReadsIsCutOff(t *testing.T) {
	t.Parallel()
	// The answer goes out without reading the body, as authentication's
	// 401 does; net/http then waits for the rest of the body, and only the
	// server's read timeout ends that wait.
	srv := NewServer("127.0.0.1:0", HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		return &domain.Error{Kind: domain.KindUnauthorized, Message: "authentication required"}
	}), zap.NewNop(), time.Second, Timeouts{Read: readTimeout})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	conn, in := dial(t, srv.Addr())
	if _, err := io.WriteString(conn, "POST /profiles HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":\"a"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(in, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	if _, err := in.ReadByte(); err != io.EOF {
		t.Fatalf("connection kept open after a stalled body nobody read: %v", err)
	}
}
