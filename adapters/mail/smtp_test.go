package mail

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// fakeSMTP is a one-connection-at-a-time SMTP server on 127.0.0.1 that
// records what clients tell it.
type fakeSMTP struct {
	ln  net.Listener
	tls *tls.Config // STARTTLS is offered when set, unless implicitTLS
	// implicitTLS makes the server speak TLS from the first byte, as on
	// port 465.
	implicitTLS bool
	// stall makes the server greet and then say nothing more.
	stall bool

	mu       sync.Mutex
	sessions []*session
	done     chan struct{}
}

type session struct {
	usedTLS   bool
	authAfter bool // AUTH arrived after the TLS upgrade
	auth      string
	from      string
	rcpt      []string
	data      string
}

func startFakeSMTP(t *testing.T, tlsConfig *tls.Config, stall bool) *fakeSMTP {
	t.Helper()
	return listen(t, &fakeSMTP{tls: tlsConfig, stall: stall})
}

// startFakeSMTPS starts a server that speaks TLS from the first byte.
func startFakeSMTPS(t *testing.T, tlsConfig *tls.Config) *fakeSMTP {
	t.Helper()
	return listen(t, &fakeSMTP{tls: tlsConfig, implicitTLS: true})
}

func listen(t *testing.T, f *fakeSMTP) *fakeSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ln, f.done = ln, make(chan struct{})
	go f.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		<-f.done
	})
	return f
}

// server is where a client finds f, with no credentials.
func (f *fakeSMTP) server() SMTPServer {
	return SMTPServer{Host: "127.0.0.1", Port: f.ln.Addr().(*net.TCPAddr).Port, From: "profilesvc@127.0.0.1"}
}

func (f *fakeSMTP) serve() {
	defer close(f.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		s := &session{}
		f.mu.Lock()
		f.sessions = append(f.sessions, s)
		f.mu.Unlock()
		wg.Go(func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			f.talk(conn, s)
		})
	}
}

func (f *fakeSMTP) talk(conn net.Conn, s *session) {
	if f.implicitTLS {
		tc := tls.Server(conn, f.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		conn = tc
		f.mu.Lock()
		s.usedTLS = true
		f.mu.Unlock()
	}
	tp := textproto.NewConn(conn)
	reply := func(lines ...string) {
		for _, l := range lines {
			if _, err := io.WriteString(conn, l+"\r\n"); err != nil {
				return
			}
		}
	}
	reply("220 fake ESMTP")
	if f.stall {
		_, _ = io.Copy(io.Discard, conn)
		return
	}
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		f.mu.Lock()
		switch strings.ToUpper(verb) {
		case "EHLO":
			lines := []string{"250-fake", "250-8BITMIME"}
			if f.tls != nil && !s.usedTLS {
				lines = append(lines, "250-STARTTLS")
			}
			reply(append(lines, "250 AUTH PLAIN")...)
		case "STARTTLS":
			reply("220 go ahead")
			tc := tls.Server(conn, f.tls)
			if err := tc.Handshake(); err != nil {
				f.mu.Unlock()
				return
			}
			conn, tp = tc, textproto.NewConn(tc)
			s.usedTLS = true
		case "AUTH":
			s.auth = arg
			s.authAfter = s.usedTLS
			reply("235 ok")
		case "MAIL":
			s.from = arg
			reply("250 ok")
		case "RCPT":
			s.rcpt = append(s.rcpt, arg)
			reply("250 ok")
		case "DATA":
			reply("354 go on")
			f.mu.Unlock()
			body, err := tp.ReadDotBytes()
			f.mu.Lock()
			if err != nil {
				f.mu.Unlock()
				return
			}
			s.data = string(body)
			reply("250 queued")
		case "QUIT":
			reply("221 bye")
			f.mu.Unlock()
			return
		default:
			reply("502 not implemented")
		}
		f.mu.Unlock()
	}
}

func (f *fakeSMTP) only(t *testing.T) session {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sessions) != 1 {
		t.Fatalf("sessions = %d, want 1", len(f.sessions))
	}
	return *f.sessions[0]
}

func TestSMTPDeliversWithPlainAuth(t *testing.T) {
	srv := startFakeSMTP(t, nil, false)
	server := srv.server()
	server.Username, server.Password, server.From = "mailer", "s3cret", "noreply@example.com"
	s := NewSMTP(server)
	text := "Hello,\n\nreset here: https://example.com/reset?token=abc\n.\nA line starting with a dot and a long line " +
		strings.Repeat("x", 200) + "\nÜmlaut."
	err := s.Send(context.Background(), ports.Mail{To: "Ann <ann@example.com>", Subject: "Reset your password — now", Text: text})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.only(t)
	if !strings.HasPrefix(got.from, "FROM:<noreply@example.com>") {
		t.Errorf("MAIL %s, want FROM:<noreply@example.com>", got.from)
	}
	if len(got.rcpt) != 1 || got.rcpt[0] != "TO:<ann@example.com>" {
		t.Errorf("RCPT %v, want [TO:<ann@example.com>]", got.rcpt)
	}
	wantAuth := "PLAIN " + base64.StdEncoding.EncodeToString([]byte("\x00mailer\x00s3cret"))
	if got.auth != wantAuth {
		t.Errorf("AUTH %q, want %q", got.auth, wantAuth)
	}
	msg, err := mail.ReadMessage(strings.NewReader(got.data))
	if err != nil {
		t.Fatalf("DATA is not a message: %v\n%s", err, got.data)
	}
	if subj := decodeHeader(t, msg.Header.Get("Subject")); subj != "Reset your password — now" {
		t.Errorf("Subject = %q", subj)
	}
	if to := msg.Header.Get("To"); to != "ann@example.com" {
		t.Errorf("To = %q", to)
	}
	if from := msg.Header.Get("From"); from != "noreply@example.com" {
		t.Errorf("From = %q", from)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	// The server's reader turns CRLF into LF; the transport ends the body
	// with a line break.
	if got := strings.TrimSuffix(string(body), "\n"); got != text {
		t.Errorf("body = %q\nwant %q", got, text)
	}
}

func TestSMTPUpgradesWithSTARTTLSBeforeAuth(t *testing.T) {
	serverTLS, roots := selfSignedTLS(t)
	srv := startFakeSMTP(t, serverTLS, false)
	s := withCredentials(srv.server())
	s.tlsConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if err := s.Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.only(t)
	if !got.usedTLS || !got.authAfter {
		t.Fatalf("usedTLS = %v, auth after TLS = %v; want both", got.usedTLS, got.authAfter)
	}
}

func TestSMTPSpeaksTLSFromTheStartWhenImplicit(t *testing.T) {
	serverTLS, roots := selfSignedTLS(t)
	srv := startFakeSMTPS(t, serverTLS)
	server := srv.server()
	server.ImplicitTLS = true
	server.Username, server.Password = "mailer", "s3cret"
	s := NewSMTP(server)
	s.tlsConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if err := s.Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.only(t)
	if !got.usedTLS || !got.authAfter {
		t.Fatalf("usedTLS = %v, auth after TLS = %v; want both", got.usedTLS, got.authAfter)
	}
	wantAuth := "PLAIN " + base64.StdEncoding.EncodeToString([]byte("\x00mailer\x00s3cret"))
	if got.auth != wantAuth || !strings.HasSuffix(got.data, "\n\nbody\n") {
		t.Fatalf("auth = %q, data = %q; want %q and the message", got.auth, got.data, wantAuth)
	}
}

func TestSMTPImplicitTLSRefusesUntrustedCertificate(t *testing.T) {
	serverTLS, _ := selfSignedTLS(t)
	srv := startFakeSMTPS(t, serverTLS)
	server := srv.server()
	server.ImplicitTLS = true
	server.Username, server.Password = "mailer", "s3cret"
	err := NewSMTP(server).Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"})
	var unknownAuthority x509.UnknownAuthorityError
	if !errors.As(err, &unknownAuthority) {
		t.Fatalf("Send over implicit TLS to an untrusted certificate = %v, want x509.UnknownAuthorityError", err)
	}
	if got := srv.only(t); got.auth != "" || got.from != "" {
		t.Fatalf("the client went on past the failed handshake: auth %q, MAIL %q", got.auth, got.from)
	}
}

// withCredentials returns a transport to server that authenticates.
func withCredentials(server SMTPServer) *SMTP {
	server.Username, server.Password = "mailer", "s3cret"
	return NewSMTP(server)
}

func TestSMTPRefusesUntrustedCertificate(t *testing.T) {
	serverTLS, _ := selfSignedTLS(t)
	srv := startFakeSMTP(t, serverTLS, false)
	err := withCredentials(srv.server()).Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"})
	if err == nil {
		t.Fatal("Send over STARTTLS with an untrusted certificate succeeded")
	}
	if got := srv.only(t); got.auth != "" {
		t.Fatalf("credentials sent despite the failed TLS upgrade: %q", got.auth)
	}
}

func TestSMTPWithoutUserSkipsAuth(t *testing.T) {
	srv := startFakeSMTP(t, nil, false)
	if err := NewSMTP(srv.server()).Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := srv.only(t); got.auth != "" || got.data == "" {
		t.Fatalf("auth = %q, data = %q; want no auth and a message", got.auth, got.data)
	}
}

func TestSMTPHonoursContext(t *testing.T) {
	srv := startFakeSMTP(t, nil, true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := NewSMTP(srv.server()).Send(ctx, ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send to a stalled server = %v, want the deadline", err)
	}
}

func TestSMTPRefusesHeaderInjection(t *testing.T) {
	s := NewSMTP(SMTPServer{Host: "127.0.0.1", Port: 1, From: "profilesvc@127.0.0.1"})
	for _, m := range []ports.Mail{
		{To: "bob@example.com\r\nBcc: eve@example.com", Subject: "hi"},
		{To: "bob@example.com", Subject: "hi\r\nBcc: eve@example.com"},
		{To: "not an address", Subject: "hi"},
	} {
		if err := s.Send(context.Background(), m); err == nil {
			t.Errorf("Send(%+v) succeeded", m)
		}
	}
}

func TestSMTPStringMasksThePassword(t *testing.T) {
	for _, c := range []struct {
		server SMTPServer
		want   string
	}{
		{SMTPServer{Host: "mail.example.com", Port: 587, Username: "user", Password: "hunter2"}, "smtp://user:xxxxx@mail.example.com:587"},
		{SMTPServer{Host: "mail.example.com", Port: 465, Username: "user", Password: "hunter2", ImplicitTLS: true}, "smtps://user:xxxxx@mail.example.com:465"},
		{SMTPServer{Host: "::1", Port: 25}, "smtp://[::1]:25"},
	} {
		if got := NewSMTP(c.server).String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func decodeHeader(t *testing.T, v string) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		t.Fatalf("decoding header %q: %v", v, err)
	}
	return s
}

// selfSignedTLS returns a server configuration for 127.0.0.1 and the pool
// that trusts it.
func selfSignedTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}, pool
}
