package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
	"github.com/profilesvc/profilesvc/ports"
)

// testRecords are the fake DNS zone: names an attacker could register.
var testRecords = map[string][]netip.Addr{
	// Public at first sight, loopback when dialled: DNS rebinding.
	"rebind.example": {netip.MustParseAddr("127.0.0.1")},
	// One public and one private address: a dial may pick either.
	"mixed.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")},
	"metadata.example": {netip.MustParseAddr("169.254.169.254")},
	"mapped.example":   {netip.MustParseAddr("::ffff:192.168.0.1")},
	"public.example":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")},
}

func guarded(t *testing.T) *Sender {
	t.Helper()
	return NewSender(Options{Timeout: 2 * time.Second, Resolver: netguardtest.FakeResolver(t, testRecords)})
}

func TestAllowedAddr(t *testing.T) {
	// true: a public unicast address a webhook may reach.
	cases := map[string]bool{
		"127.0.0.1":              false,
		"127.1.2.3":              false,
		"::1":                    false,
		"10.0.0.1":               false,
		"172.16.5.4":             false,
		"192.168.1.1":            false,
		"fc00::1":                false,
		"fd12:3456::1":           false,
		"169.254.1.1":            false,
		"fe80::1":                false,
		"169.254.169.254":        false,
		"fd00:ec2::254":          false,
		"100.64.1.1":             false,
		"100.127.255.254":        false,
		"0.0.0.0":                false,
		"0.1.2.3":                false,
		"::":                     false,
		"224.0.0.1":              false,
		"ff02::1":                false,
		"255.255.255.255":        false,
		"240.0.0.1":              false,
		"::ffff:127.0.0.1":       false,
		"::ffff:10.0.0.1":        false,
		"::ffff:169.254.169.254": false,
		"8.8.8.8":                true,
		"93.184.216.34":          true,
		"100.128.0.1":            true,
		"172.32.0.1":             true,
		"2606:4700::1111":        true,
	}
	for addr, want := range cases {
		if got := netguard.AllowedAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("netguard.AllowedAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckTargetRefusesForbiddenAddresses(t *testing.T) {
	s := guarded(t)
	// One message whatever the reason, naming only the host as given.
	cases := map[string]string{
		"https://127.0.0.1/hook":                   "host 127.0.0.1 is not reachable or not allowed",
		"https://10.0.0.1":                         "host 10.0.0.1 is not reachable or not allowed",
		"https://169.254.169.254/latest/meta-data": "host 169.254.169.254 is not reachable or not allowed",
		"https://[::1]:8443/":                      "host ::1 is not reachable or not allowed",
		"https://100.64.1.1":                       "host 100.64.1.1 is not reachable or not allowed",
		"https://[::ffff:10.0.0.1]":                "host ::ffff:10.0.0.1 is not reachable or not allowed",
		"https://[fe80::1%25eth0]":                 "host fe80::1%eth0 is not reachable or not allowed",
		"https://0.0.0.0":                          "host 0.0.0.0 is not reachable or not allowed",
		"https://[fd00:ec2::254]":                  "host fd00:ec2::254 is not reachable or not allowed",
		"https://localhost/hook":                   "host localhost is not reachable or not allowed",
		"https://rebind.example/hook":              "host rebind.example is not reachable or not allowed",
		"https://mixed.example":                    "host mixed.example is not reachable or not allowed",
		"https://metadata.example":                 "host metadata.example is not reachable or not allowed",
		"https://mapped.example":                   "host mapped.example is not reachable or not allowed",
		"https://nowhere.example":                  "host nowhere.example is not reachable or not allowed",
	}
	for u, want := range cases {
		err := s.CheckTarget(context.Background(), u)
		if err == nil || err.Error() != want {
			t.Errorf("CheckTarget(%s) = %v, want %q", u, err, want)
		}
	}
}

func TestCheckTargetAcceptsPublicAddresses(t *testing.T) {
	s := guarded(t)
	for _, u := range []string{
		"https://93.184.216.34/hook",
		"https://[2606:4700::1111]:8443/hook",
		"https://public.example/hooks?team=1",
		"https://PUBLIC.example./hooks",
	} {
		if err := s.CheckTarget(context.Background(), u); err != nil {
			t.Errorf("CheckTarget(%s) = %v, want nil", u, err)
		}
	}
}

func TestCheckTargetRejectsBadURLs(t *testing.T) {
	s := guarded(t)
	cases := map[string]string{
		"http://public.example/hook":   "scheme must be https",
		"ftp://public.example/":        "scheme must be https",
		"public.example/hook":          "scheme must be https",
		"https://":                     "no host",
		"https:///path":                "no host",
		"https://public.example:0/":    "invalid port",
		"https://public.example:99999": "invalid port",
		"%zz":                          "not a valid URL",
	}
	for u, want := range cases {
		err := s.CheckTarget(context.Background(), u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckTarget(%q) = %v, want %q", u, err, want)
		}
	}
}

func TestCheckTargetAllowPrivate(t *testing.T) {
	s := NewSender(Options{AllowPrivate: true, Resolver: netguardtest.FakeResolver(t, testRecords)})
	for _, u := range []string{"http://127.0.0.1:8080/hook", "https://10.0.0.1", "http://localhost/", "http://rebind.example/"} {
		if err := s.CheckTarget(context.Background(), u); err != nil {
			t.Errorf("CheckTarget(%s) = %v, want nil", u, err)
		}
	}
	// An unresolvable host is useless even where private targets are fine.
	if err := s.CheckTarget(context.Background(), "http://nowhere.example/"); err == nil {
		t.Error("CheckTarget(nowhere.example) = nil, want an error")
	}
}

// TestSendGuardRefusesBeforeConnecting shows the dial-time guard: Send
// does not rely on CheckTarget having run, and refuses the address it is
// about to dial, after DNS, so no connection reaches the server.
func TestSendGuardRefusesBeforeConnecting(t *testing.T) {
	var conns, hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := netguardtest.FakeResolver(t, testRecords)

	s := NewSender(Options{Timeout: 2 * time.Second, Resolver: resolver})
	// A name that no longer resolves reads as a refused one does: the
	// attempt log is the client's to read.
	for _, host := range []string{"127.0.0.1", "localhost", "rebind.example", "nowhere.example"} {
		u := "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/hook"
		_, err := s.Send(context.Background(), ports.WebhookRequest{URL: u, Body: []byte(`{}`)})
		if want := "host " + host + " is not reachable or not allowed"; err == nil || err.Error() != want {
			t.Errorf("Send(%s) err = %v, want %q", u, err, want)
		}
	}
	if conns.Load() != 0 || hits.Load() != 0 {
		t.Fatalf("guarded sender reached the server: %d connections, %d requests", conns.Load(), hits.Load())
	}

	// The same server is reached once private targets are allowed.
	open := NewSender(Options{Timeout: 2 * time.Second, Resolver: resolver, AllowPrivate: true})
	open.transport.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	resp, err := open.Send(context.Background(), ports.WebhookRequest{URL: srv.URL + "/hook", Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("Send with AllowPrivate = %+v, %v; want 204", resp, err)
	}
	if hits.Load() != 1 {
		t.Fatalf("server saw %d requests, want 1", hits.Load())
	}
}

// local returns a sender that may reach httptest servers on 127.0.0.1.
func local(timeout time.Duration) *Sender {
	return NewSender(Options{Timeout: timeout, AllowPrivate: true})
}

func TestSendReturnsStatusAsIs(t *testing.T) {
	for _, code := range []int{http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusBadRequest, http.StatusInternalServerError} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(strings.Repeat("x", 100<<10))) // more than the drain limit
		}))
		resp, err := local(2*time.Second).Send(context.Background(), ports.WebhookRequest{URL: srv.URL, Body: []byte(`{}`)})
		srv.Close()
		if err != nil || resp.StatusCode != code {
			t.Errorf("Send = %+v, %v; want %d", resp, err, code)
		}
		if err == nil && resp.Latency <= 0 {
			t.Errorf("latency %v, want > 0", resp.Latency)
		}
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(http.ResponseWriter, *http.Request) { followed.Add(1) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	resp, err := local(2*time.Second).Send(context.Background(), ports.WebhookRequest{URL: srv.URL + "/hook", Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("Send = %+v, %v; want 302", resp, err)
	}
	// Send returned, so a followed redirect would already have been served.
	if followed.Load() != 0 {
		t.Fatal("the redirect's Location was requested")
	}
}

func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: unblock, then close

	start := time.Now()
	_, err := local(200*time.Millisecond).Send(context.Background(), ports.WebhookRequest{URL: srv.URL, Body: []byte(`{}`)})
	if err == nil || err.Error() != "timeout after 200ms" {
		t.Fatalf("Send err = %v, want timeout after 200ms", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Send took %v", d)
	}
}

func TestSendSendsBodyAndHeaders(t *testing.T) {
	type seen struct {
		method string
		header http.Header
		body   string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Clone(), string(b)}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	s := local(2 * time.Second)

	_, err := s.Send(context.Background(), ports.WebhookRequest{
		URL:     srv.URL,
		Body:    []byte(`{"type":"profile.created"}`),
		Headers: map[string]string{"X-Profilesvc-Signature": "t=1,v1=abc", "X-Profilesvc-Delivery": "d1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.method != http.MethodPost || r.body != `{"type":"profile.created"}` {
		t.Fatalf("received %s %q", r.method, r.body)
	}
	for k, v := range map[string]string{
		"X-Profilesvc-Signature": "t=1,v1=abc",
		"X-Profilesvc-Delivery":  "d1",
		"Content-Type":           "application/json",
	} {
		if r.header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, r.header.Get(k), v)
		}
	}

	// A Content-Type given by the caller is kept.
	_, err = s.Send(context.Background(), ports.WebhookRequest{
		URL: srv.URL, Body: []byte(`x`), Headers: map[string]string{"Content-Type": "text/plain"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ct := (<-got).header.Get("Content-Type"); ct != "text/plain" {
		t.Fatalf("Content-Type = %q, want text/plain", ct)
	}
}

func TestSendErrorsAreShortAndLeakNothing(t *testing.T) {
	// A port nobody listens on: bind one, then free it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	_, err = local(2*time.Second).Send(context.Background(), ports.WebhookRequest{
		URL:     "http://" + addr + "/hook?token=urlsecret",
		Body:    []byte(`{"secret":"bodysecret"}`),
		Headers: map[string]string{"X-Profilesvc-Signature": "headersecret"},
	})
	if err == nil || err.Error() != "connection refused" {
		t.Fatalf("Send err = %v, want connection refused", err)
	}

	// Whatever the failure, the message never carries the request.
	_, err = guarded(t).Send(context.Background(), ports.WebhookRequest{
		URL:     "https://nowhere.example/hook?token=urlsecret",
		Body:    []byte(`{"secret":"bodysecret"}`),
		Headers: map[string]string{"X-Profilesvc-Signature": "headersecret"},
	})
	if err == nil {
		t.Fatal("Send to an unresolvable host succeeded")
	}
	for _, secret := range []string{"urlsecret", "bodysecret", "headersecret"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q contains %s", err, secret)
		}
	}
}

func TestSendRefusesPlainHTTPWhenGuarded(t *testing.T) {
	_, err := guarded(t).Send(context.Background(), ports.WebhookRequest{URL: "http://public.example/hook"})
	if err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("Send err = %v, want a scheme error", err)
	}
}

func TestSendCancelledByCaller(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := local(2*time.Second).Send(ctx, ports.WebhookRequest{URL: srv.URL, Body: []byte(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send err = %v, want context.Canceled", err)
	}
}

func TestTransportSettings(t *testing.T) {
	s := NewSender(Options{MaxConnsPerHost: 8})
	tr := s.transport
	if tr.Proxy != nil {
		t.Error("environment proxies would bypass the dial guard")
	}
	if tr.MaxIdleConnsPerHost < 32 || tr.MaxConnsPerHost != 8 {
		t.Errorf("MaxIdleConnsPerHost %d, MaxConnsPerHost %d", tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost)
	}
	if s.client.Timeout != DefaultTimeout {
		t.Errorf("timeout %v, want default %v", s.client.Timeout, DefaultTimeout)
	}
	if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		t.Error("TLS below 1.2 allowed")
	}
}

func TestSendKeepsTheStartOfTheAnswerAsOneLineOfText(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "  down for\tmaintenance\x00\u202e\r\n\xff back soon "+strings.Repeat("x", 70_000))
	}))
	t.Cleanup(srv.Close)
	resp, err := local(2*time.Second).Send(context.Background(), ports.WebhookRequest{URL: srv.URL + "/hook", Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Send = %+v, %v", resp, err)
	}
	prefix := "down for maintenance \ufffd back soon "
	want := prefix + strings.Repeat("x", 200-len([]rune(prefix)))
	if resp.Answer != want {
		t.Fatalf("answer %q,\nwant   %q", resp.Answer, want)
	}
}
