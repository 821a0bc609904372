package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Mailer = (*SMTP)(nil)

// defaultTimeout bounds one delivery when the caller's context has no
// deadline, so a silent server cannot hold a request forever.
const defaultTimeout = 30 * time.Second

// SMTP delivers mail to one SMTP server. Without implicit TLS it upgrades to
// TLS when the server offers STARTTLS; with it, it speaks TLS from the start.
// Credentials are sent with PLAIN, which net/smtp refuses to do over an
// unencrypted connection except to localhost.
type SMTP struct {
	addr        string
	host        string
	implicitTLS bool
	user        string
	password    string
	from        string
	// tlsConfig is nil in production (system roots); tests trust their own
	// certificate through it.
	tlsConfig *tls.Config
}

// SMTPServer says where SMTP delivers and as whom. Every field but Username
// and Password is required; the caller has checked them.
type SMTPServer struct {
	Host string
	Port int
	// Username is empty for a server that takes mail without
	// authentication.
	Username string
	Password string
	// ImplicitTLS speaks TLS from the first byte (smtps, port 465 as a
	// rule) instead of upgrading with STARTTLS.
	ImplicitTLS bool
	// From is the sender's bare address.
	From string
}

// NewSMTP returns a transport that delivers to server.
func NewSMTP(server SMTPServer) *SMTP {
	return &SMTP{
		addr:        net.JoinHostPort(server.Host, strconv.Itoa(server.Port)),
		host:        server.Host,
		implicitTLS: server.ImplicitTLS,
		user:        server.Username,
		password:    server.Password,
		from:        server.From,
	}
}

// String describes the transport with its password masked, so it is safe to
// log.
func (s *SMTP) String() string {
	u := url.URL{Scheme: "smtp", Host: s.addr}
	if s.implicitTLS {
		u.Scheme = "smtps"
	}
	if s.user != "" {
		u.User = url.UserPassword(s.user, s.password)
	}
	return u.Redacted()
}

// Send delivers m. Cancelling ctx aborts the conversation.
func (s *SMTP) Send(ctx context.Context, m ports.Mail) error {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("mail: recipient %q: %w", m.To, err)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return errors.New("mail: subject contains a line break")
	}
	msg, err := s.message(to.Address, m)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	if err := s.deliver(ctx, to.Address, msg); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mail: sending to %s via %s: %w", to.Address, s.addr, ctx.Err())
		}
		return fmt.Errorf("mail: sending to %s via %s: %w", to.Address, s.addr, err)
	}
	return nil
}

func (s *SMTP) tlsFor() *tls.Config {
	if s.tlsConfig != nil {
		c := s.tlsConfig.Clone()
		c.ServerName = s.host
		return c
	}
	return &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
}

func (s *SMTP) deliver(ctx context.Context, to string, msg []byte) error {
	var conn net.Conn
	var err error
	if s.implicitTLS {
		d := tls.Dialer{Config: s.tlsFor()}
		conn, err = d.DialContext(ctx, "tcp", s.addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", s.addr)
	}
	if err != nil {
		return err
	}
	// Closing the connection is the only way to interrupt net/smtp mid-reply.
	// It also enforces the deadline, and unlike a connection deadline it
	// fires only once ctx is done, so the caller sees ctx's error.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		_ = conn.Close()
		return err
	}
	defer c.Close()
	if !s.implicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(s.tlsFor()); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
		}
	}
	if s.user != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("server does not offer AUTH but a user name is configured")
		}
		if err := c.Auth(smtp.PlainAuth("", s.user, s.password, s.host)); err != nil {
			return fmt.Errorf("authenticating as %s: %w", s.user, err)
		}
	}
	if err := c.Mail(s.from); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// message renders m as a plain-text MIME message. The body is
// quoted-printable so that any text, however long its lines or whatever its
// characters, reaches the recipient unchanged.
func (s *SMTP) message(to string, m ports.Mail) ([]byte, error) {
	var b bytes.Buffer
	id := make([]byte, 12)
	_, _ = rand.Read(id) // crypto/rand.Read never fails
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", s.from)
	header("To", to)
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", time.Now().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+s.host+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(m.Text)); err != nil {
		return nil, fmt.Errorf("mail: encoding body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return nil, fmt.Errorf("mail: encoding body: %w", err)
	}
	return b.Bytes(), nil
}
