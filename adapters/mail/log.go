// Package mail owns the transports behind ports.Mailer: a log transport for
// development, which prints each message (reset links included) so that a
// developer can follow them without a mail server, and an SMTP transport for
// production.
package mail

import (
	"context"

	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Mailer = (*Log)(nil)

// Log "sends" mail by logging it whole. Its output contains whatever the
// message carries, one-time links included, which is its purpose: use SMTP
// wherever the logs are read by anyone but the developer.
type Log struct {
	logger *zap.Logger
}

// NewLog returns a transport that writes each message to l.
func NewLog(l *zap.Logger) *Log { return &Log{logger: l} }

// Send writes m as one info line.
func (t *Log) Send(_ context.Context, m ports.Mail) error {
	t.logger.Info("mail (log transport)",
		zap.String("to", m.To),
		zap.String("subject", m.Subject),
		zap.String("text", m.Text),
	)
	return nil
}
