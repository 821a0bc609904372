package testenv

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on a loopback port that a test puts between the
// service and a backing service (PostgreSQL, Redis) to make that service
// fail on demand, without touching the shared server itself:
//
//   - Blackhole: connections are accepted and bytes read, but nothing is
//     forwarded in either direction, as with a server that hangs or a
//     network that drops packets.
//   - Stop: the port refuses connections and every open one is cut, as when
//     the server is stopped.
//   - Forward: back to normal; connections that lived through a blackhole
//     are cut, since the bytes they lost left them out of step.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu        sync.Mutex
	ln        net.Listener
	blackhole bool
	conns     map[*proxyConn]struct{}
	wg        sync.WaitGroup
}

type proxyConn struct {
	client, upstream net.Conn
	// stalled is set for a connection open during a blackhole; it forwards
	// nothing ever again.
	stalled bool
}

// StartProxy listens on a free loopback port and forwards to target (a
// loopback host:port). It stops when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: map[*proxyConn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() {
		p.Stop()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Blackhole makes the proxy swallow everything: open connections and new
// ones stay connected and never get an answer.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
	for c := range p.conns {
		c.stalled = true
	}
}

// Stop closes the port (connections are refused) and cuts every open
// connection.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.cutLocked(func(*proxyConn) bool { return true })
}

// Forward lets traffic through again, listening anew on the same port if
// Stop closed it.
func (p *Proxy) Forward() {
	p.mu.Lock()
	p.blackhole = false
	p.cutLocked(func(c *proxyConn) bool { return c.stalled })
	listening := p.ln != nil
	p.mu.Unlock()
	if listening {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("proxy: listening again on %s: %v", p.addr, err)
		return
	}
	p.serve(ln)
}

func (p *Proxy) cutLocked(which func(*proxyConn) bool) {
	for c := range p.conns {
		if which(c) {
			_ = c.client.Close()
			if c.upstream != nil {
				_ = c.upstream.Close()
			}
			delete(p.conns, c)
		}
	}
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return // closed by Stop
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(client)
			}()
		}
	}()
}

func (p *Proxy) handle(client net.Conn) {
	c := &proxyConn{client: client}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		_ = client.Close()
		return
	}
	c.stalled = p.blackhole
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var up net.Conn
	if !c.stalled {
		var err error
		if up, err = net.Dial("tcp", p.target); err != nil {
			p.drop(c)
			return
		}
		p.mu.Lock()
		if _, open := p.conns[c]; !open {
			p.mu.Unlock()
			_ = up.Close()
			return
		}
		c.upstream = up
		p.mu.Unlock()
		go p.pipe(c, up, client)
	}
	p.pipe(c, client, up)
}

// pipe copies from src to dst until src ends, dropping what it reads while
// the connection is stalled.
func (p *Proxy) pipe(c *proxyConn, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			stalled := c.stalled
			p.mu.Unlock()
			if !stalled && dst != nil {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
		}
		if err != nil {
			break // the peer closed, or Stop or Forward cut the connection
		}
	}
	p.drop(c)
}

func (p *Proxy) drop(c *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = c.client.Close()
	if c.upstream != nil {
		_ = c.upstream.Close()
	}
	delete(p.conns, c)
}
