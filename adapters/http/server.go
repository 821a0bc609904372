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

// NewServer prepares a server for addr; Start binds it.
func NewServer(addr string, handler http.Handler, log *zap.Logger, shutdownTimeout time.Duration) *Server {
	return &Server{
		addr: addr,
		srv: &http.Server{
			Handler: handler,
			// Headers are bounded in time here and bodies by readBody.
			// There is no ReadTimeout or short WriteTimeout: net/http cancels
			// the request context when ReadTimeout passes, which would cut
			// long-running requests short.
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
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
	s.log.Info("http server listening", zap.String("addr", l.Addr().String()))
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
