//go:build linux

package chromium

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/profilesvc/profilesvc/ports"
)

// upstreamProxy is an HTTP proxy on loopback that opens CONNECT tunnels
// and records what each CONNECT asked for.
type upstreamProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	connects []string // "target auth"
	wg       sync.WaitGroup
}

func newUpstreamProxy(t *testing.T) *upstreamProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &upstreamProxy{ln: ln}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *upstreamProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *upstreamProxy) handle(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.connects = append(p.connects, req.Host+" "+req.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		// A plain http page comes as an absolute-URI request.
		req.RequestURI = ""
		req.Header.Del("Proxy-Authorization")
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer res.Body.Close()
		_ = res.Write(c)
		return
	}
	up, err := net.DialTimeout("tcp", req.Host, 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br)
		_ = up.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	<-done
}

func (p *upstreamProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...)
}

func TestTrafficGoesThroughTheProfilesProxy(t *testing.T) {
	rt := newRuntime(t, 1)
	srv := newPageServer(t)
	proxy := newUpstreamProxy(t)
	port := proxy.ln.Addr().(*net.TCPAddr).Port
	spec := launchSpec("prf_proxy", "ses_proxy")
	spec.Proxy = &ports.ProxyTarget{Type: "http", Host: "127.0.0.1", Port: port, Username: "user", Password: "secret"}
	_, err := rt.Start(testContext(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	page := connect(t, relayURL(t, rt, spec.SessionID)).page(srv.URL + "/")
	if got := evaluate[string](t, page, `document.title`); got != "test" {
		t.Fatalf("the page through the proxy has the title %q", got)
	}
	want := srv.Listener.Addr().String() + " Basic " + base64.StdEncoding.EncodeToString([]byte("user:secret"))
	found := false
	for _, c := range proxy.seen() {
		found = found || c == want
	}
	if !found {
		t.Errorf("the upstream proxy saw %q, want a request for %q", proxy.seen(), want)
	}
}

func TestADirectBrowserStaysOffPrivateAddresses(t *testing.T) {
	rt, err := New(Options{Path: chromiumPath(t), MaxBrowsers: 1, WorkDir: filepath.Join(t.TempDir(), "browsers"), Sandbox: testSandbox(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	srv := newPageServer(t)
	_, err = rt.Start(testContext(t), launchSpec("prf_guard", "ses_guard"))
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, relayURL(t, rt, "ses_guard"))
	ctx, cancel := chromedp.NewContext(c.alloc)
	t.Cleanup(cancel)
	// The navigation fails or shows Chromium's error page; either way the
	// server on loopback is never asked.
	_ = chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.languages) != 0 {
		t.Errorf("a browser without a proxy reached the loopback server at port %s (%d requests)", strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), len(srv.languages))
	}
}
