package testenv_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line on c and waits up to wait for the echo.
func roundTrip(c net.Conn, wait time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		return errors.New("echo garbled: " + line)
	}
	return err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestProxyForwardsBlackholesStopsAndRecovers(t *testing.T) {
	p := testenv.StartProxy(t, echoServer(t))
	before := dial(t, p.Addr())
	if err := roundTrip(before, 5*time.Second); err != nil {
		t.Fatalf("forwarding: %v", err)
	}

	p.Blackhole()
	var ne net.Error
	if err := roundTrip(before, 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("open connection in a blackhole: %v, want a timeout", err)
	}
	during := dial(t, p.Addr()) // accepted...
	if err := roundTrip(during, 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("new connection in a blackhole: %v, want a timeout", err) // ...never answered
	}

	p.Stop()
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while stopped: %v, want connection refused", err)
	}

	p.Forward()
	after := dial(t, p.Addr())
	if err := roundTrip(after, 5*time.Second); err != nil {
		t.Fatalf("forwarding again: %v", err)
	}
	if err := roundTrip(during, time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection from the blackhole still works or hangs: %v, want it cut", err)
	}
}
