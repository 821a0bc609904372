package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/tests/poll"
)

type slowHandler struct {
	started chan struct{}
	release chan struct{}
}

func newSlowHandler() *slowHandler {
	return &slowHandler{started: make(chan struct{}), release: make(chan struct{})}
}

func (h *slowHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	close(h.started)
	<-h.release
	writeJSON(w, http.StatusOK, map[string]string{"finished": "yes"})
}

type result struct {
	body string
	err  error
}

func get(url string) <-chan result {
	out := make(chan result, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		out <- result{body: string(b), err: err}
	}()
	return out
}

func TestServerStartFailsOnABadAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"256.0.0.1:0", "127.0.0.1:99999", "not an address"} {
		s := NewServer(addr, http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{})
		if err := s.Start(context.Background()); err == nil {
			_ = s.Stop(context.Background())
			t.Fatalf("Start(%q) succeeded", addr)
		}
	}
}

func TestServerStartFailsOnABusyAddress(t *testing.T) {
	t.Parallel()
	first := NewServer("127.0.0.1:0", http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{})
	if err := first.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Stop(context.Background()) }()
	second := NewServer(first.Addr(), http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{})
	if err := second.Start(context.Background()); err == nil {
		_ = second.Stop(context.Background())
		t.Fatal("two servers bound one address")
	}
}

func TestServerStopBeforeStartIsHarmless(t *testing.T) {
	t.Parallel()
	s := NewServer("127.0.0.1:0", http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{})
	if s.Addr() != "" {
		t.Fatalf("Addr before Start: %q", s.Addr())
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestServerStopLetsInFlightRequestsFinish(t *testing.T) {
	t.Parallel()
	h := newSlowHandler()
	s := NewServer("127.0.0.1:0", h, zap.NewNop(), time.Minute, Timeouts{})
	shuttingDown := make(chan struct{})
	s.srv.RegisterOnShutdown(func() { close(shuttingDown) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if _, port, _ := net.SplitHostPort(addr); port == "0" || port == "" {
		t.Fatalf("Addr %q does not name the bound port", addr)
	}

	inFlight := get("http://" + addr + "/slow")
	<-h.started
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	<-shuttingDown

	// The listener is closed once shutdown began; poll until it is.
	poll.Until(t, "the listener closed during shutdown", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a request was in flight", err)
	default:
	}

	close(h.release)
	r := <-inFlight
	if r.err != nil || !strings.Contains(r.body, `"finished":"yes"`) {
		t.Fatalf("in-flight request: %q %v", r.body, r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestServerStopForcesCloseAfterTheTimeout(t *testing.T) {
	t.Parallel()
	h := newSlowHandler()
	defer close(h.release)
	s := NewServer("127.0.0.1:0", h, zap.NewNop(), 20*time.Millisecond, Timeouts{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	inFlight := get("http://" + s.Addr() + "/slow")
	<-h.started
	if err := s.Stop(context.Background()); err == nil {
		t.Fatal("Stop reported a graceful shutdown although a request was cut off")
	}
	if r := <-inFlight; r.err == nil {
		t.Fatalf("the cut-off request got a full answer: %q", r.body)
	}
}

func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	s := NewServer("127.0.0.1:0", http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{})
	if s.srv.ReadHeaderTimeout != 10*time.Second || s.srv.ReadTimeout != 30*time.Second || s.srv.IdleTimeout != time.Minute {
		t.Fatalf("defaults: header %v, read %v, idle %v", s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.IdleTimeout)
	}
	// The headers are part of the request: their bound never exceeds the
	// whole request's.
	s = NewServer("127.0.0.1:0", http.NotFoundHandler(), zap.NewNop(), time.Second, Timeouts{ReadHeader: 5 * time.Second, Read: 2 * time.Second, Idle: 3 * time.Second})
	if s.srv.ReadHeaderTimeout != 2*time.Second || s.srv.ReadTimeout != 2*time.Second || s.srv.IdleTimeout != 3*time.Second {
		t.Fatalf("configured: header %v, read %v, idle %v", s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.IdleTimeout)
	}
}
