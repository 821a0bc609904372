package apptest

import (
	"context"
	"strings"
	"sync"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Mailer = (*Mailer)(nil)

// Mailer keeps the mail it is asked to send. While Err is set it refuses to
// send with Err and keeps nothing.
type Mailer struct {
	Err error

	mu   sync.Mutex
	sent []ports.Mail
}

// Send keeps msg, or answers Err.
func (m *Mailer) Send(_ context.Context, msg ports.Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err != nil {
		return m.Err
	}
	m.sent = append(m.sent, msg)
	return nil
}

// Sent returns the mail sent so far, oldest first.
func (m *Mailer) Sent() []ports.Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ports.Mail(nil), m.sent...)
}

// TokenAfter returns what the last mail sent states after label, up to the
// end of that line, and whether there is a last mail that states label.
func (m *Mailer) TokenAfter(label string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sent) == 0 {
		return "", false
	}
	_, rest, ok := strings.Cut(m.sent[len(m.sent)-1].Text, label)
	tok, _, _ := strings.Cut(rest, "\n")
	return tok, ok
}
