package ports

import (
	"context"
	"time"
)

// WebhookRequest is one delivery attempt's HTTP request.
type WebhookRequest struct {
	URL     string
	Body    []byte
	Headers map[string]string
}

// WebhookResponse is what the receiver answered.
type WebhookResponse struct {
	StatusCode int
	Latency    time.Duration
	// Answer is the start of the answer's body, as webhook.Excerpt makes
	// it.
	Answer string
}

// WebhookSender sends deliveries to customers' servers.
type WebhookSender interface {
	// Send POSTs the request once. Redirects are not followed (their
	// status is returned); no answer within the sender's time-out, a
	// connection error or a refused address is an error.
	Send(ctx context.Context, r WebhookRequest) (WebhookResponse, error)
	// CheckTarget resolves the URL's host and refuses it when the sender
	// would not connect there (loopback, private, link-local, metadata
	// addresses), unless private targets are allowed.
	CheckTarget(ctx context.Context, rawURL string) error
}

// SecretBox encrypts secrets kept at rest (webhook secrets) with the
// service's key.
type SecretBox interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// WebhookMetrics records the delivery pipeline's figures.
type WebhookMetrics interface {
	// Attempt counts one attempt by outcome ("succeeded", "retry",
	// "failed") and records its latency.
	Attempt(outcome string, latency time.Duration)
	// OldestPending sets the age of the oldest pending delivery (0: none).
	OldestPending(age time.Duration)
}
