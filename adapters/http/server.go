package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Server owns the listener and the http.Server of the API.
type Server struct {
	addr            string
	srv             *http.Server
	log             *zap.Logger
	shutdownTimeout time.Duration

	mu       sync.Mutex
	listener net.Listener
	done     chan struct{}
}

// Timeouts bound how long a client may take to send a request. A zero
// field takes the default below.
type Timeouts struct {
	// ReadHeader bounds the request line and headers.
	ReadHeader time.Duration
	// Read bounds the whole request, body included, from its first byte.
	// It holds whether or not a handler reads the body: an answer given
	// without reading it (a 401, a 404) is followed by net/http draining
	// what is left of the body, and a client that stalls there would hold
	// the connection forever without it.
	Read time.Duration
	// Idle bounds the wait for the next request on a kept-alive
	// connection.
	Idle time.Duration
}

// Default timeouts: a JSON body is at most 1 MiB, which 30 s carry at
// 35 KB/s.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
)

func (t Timeouts) orDefaults() Timeouts {
	if t.ReadHeader <= 0 {
		t.ReadHeader = DefaultReadHeaderTimeout
	}
	if t.Read <= 0 {
		t.Read = DefaultReadTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

// NewServer prepares a server for addr; Start binds it.
func NewServer(addr string, handler http.Handler, log *zap.Logger, shutdownTimeout time.Duration, timeouts Timeouts) *Server {
	timeouts = timeouts.orDefaults()
	return &Server{
		addr: addr,
		srv: &http.Server{
			Handler: handler,
			// ReadTimeout does not cut long-running handlers short: net/http
			// clears the connection's read deadline once the body has been
			// read to its end (or at once for a request without a body),
			// before it watches the connection for a client that goes away.
			// There is no WriteTimeout, which would.
			ReadHeaderTimeout: min(timeouts.ReadHeader, timeouts.Read),
			ReadTimeout:       timeouts.Read,
			IdleTimeout:       timeouts.Idle,
			ErrorLog:          zap.NewStdLog(log.Named("http")),
		},
		log:             log,
		shutdownTimeout: shutdownTimeout,
	}
}

// Start binds the listener before returning, so a bad or busy address fails
// the start, and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("http server: already started")
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("http server: listen on %q: %w", s.addr, err)
	}
	s.listener = l
	s.done = make(chan struct{})
	s.log.Debug("http server listening", zap.String("addr", l.Addr().String()))
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped serving", zap.Error(err))
		}
	}()
	return nil
}

// Addr is the bound address (the real port when addr asked for port 0), or
// "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Stop stops accepting connections and waits for in-flight requests to
// finish, for at most the shutdown timeout (or until ctx ends); then it
// closes the connections still open and reports that it had to.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.shutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.log.Warn("in-flight requests did not finish in time; closing their connections",
			zap.Duration("timeout", s.shutdownTimeout), zap.Error(err))
		if cerr := s.srv.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		err = fmt.Errorf("http server: graceful shutdown incomplete: %w", err)
	}
	<-done
	return err
}
