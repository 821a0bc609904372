package ports

import "context"

// Mail is one plain-text message.
type Mail struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends mail.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}
