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
	tls *tls.Config // STARTTLS is offered when set
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSMTP{ln: ln, tls: tlsConfig, stall: stall, done: make(chan struct{})}
	go f.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		<-f.done
	})
	return f
}

func (f *fakeSMTP) port() string {
	_, p, _ := net.SplitHostPort(f.ln.Addr().String())
	return p
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
	s, err := NewSMTP("smtp://mailer:s3cret@127.0.0.1:" + srv.port() + "?from=noreply@example.com")
	if err != nil {
		t.Fatal(err)
	}
	text := "Hello,\n\nreset here: https://example.com/reset?token=abc\n.\nA line starting with a dot and a long line " +
		strings.Repeat("x", 200) + "\nÜmlaut."
	err = s.Send(context.Background(), ports.Mail{To: "Ann <ann@example.com>", Subject: "Reset your password — now", Text: text})
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
	s, err := NewSMTP("smtp://mailer:s3cret@127.0.0.1:" + srv.port())
	if err != nil {
		t.Fatal(err)
	}
	s.tlsConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if err := s.Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.only(t)
	if !got.usedTLS || !got.authAfter {
		t.Fatalf("usedTLS = %v, auth after TLS = %v; want both", got.usedTLS, got.authAfter)
	}
	if !strings.HasPrefix(got.from, "FROM:<profilesvc@127.0.0.1>") {
		t.Errorf("MAIL %s, want the default sender profilesvc@<host>", got.from)
	}
}

func TestSMTPRefusesUntrustedCertificate(t *testing.T) {
	serverTLS, _ := selfSignedTLS(t)
	srv := startFakeSMTP(t, serverTLS, false)
	s, err := NewSMTP("smtp://mailer:s3cret@127.0.0.1:" + srv.port())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"})
	if err == nil {
		t.Fatal("Send over STARTTLS with an untrusted certificate succeeded")
	}
	if got := srv.only(t); got.auth != "" {
		t.Fatalf("credentials sent despite the failed TLS upgrade: %q", got.auth)
	}
}

func TestSMTPWithoutUserSkipsAuth(t *testing.T) {
	srv := startFakeSMTP(t, nil, false)
	s, err := NewSMTP("smtp://127.0.0.1:" + srv.port())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := srv.only(t); got.auth != "" || got.data == "" {
		t.Fatalf("auth = %q, data = %q; want no auth and a message", got.auth, got.data)
	}
}

func TestSMTPHonoursContext(t *testing.T) {
	srv := startFakeSMTP(t, nil, true)
	s, err := NewSMTP("smtp://127.0.0.1:" + srv.port())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = s.Send(ctx, ports.Mail{To: "bob@example.com", Subject: "hi", Text: "body"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send to a stalled server = %v, want the deadline", err)
	}
}

func TestSMTPRefusesHeaderInjection(t *testing.T) {
	s, err := NewSMTP("smtp://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
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

func TestNewSMTP(t *testing.T) {
	s, err := NewSMTP("smtp://user:hunter2@mail.example.com:587")
	if err != nil {
		t.Fatal(err)
	}
	if s.addr != "mail.example.com:587" || s.user != "user" || s.password != "hunter2" || s.from != "profilesvc@mail.example.com" {
		t.Fatalf("parsed %+v", s)
	}
	if strings.Contains(s.String(), "hunter2") {
		t.Fatalf("String() = %q shows the password", s.String())
	}
	if s, err := NewSMTP("smtps://mail.example.com"); err != nil || s.addr != "mail.example.com:465" || !s.implicitTLS {
		t.Fatalf("smtps default: %+v, %v", s, err)
	}
	if s, err := NewSMTP("smtp://mail.example.com"); err != nil || s.addr != "mail.example.com:25" {
		t.Fatalf("smtp default: %+v, %v", s, err)
	}
	for _, bad := range []string{
		"http://user:hunter2@mail.example.com",
		"smtp://user:hunter2@:25",
		"smtp://user:hunter2@mail.example.com:25/?from=not-an-address",
		"smtp://user:hunter2@mail example.com:%zz",
	} {
		_, err := NewSMTP(bad)
		if err == nil {
			t.Errorf("NewSMTP(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewSMTP(%q) error shows the password: %v", bad, err)
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
