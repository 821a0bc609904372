package webhook

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.WebhookMetrics = (*Metrics)(nil)

// outcomes are the attempt outcomes the dispatcher reports. Anything else
// is counted as "other", so a bug cannot grow the series without bound.
var outcomes = []string{"succeeded", "retry", "failed"}

// Metrics are the delivery pipeline's Prometheus figures.
type Metrics struct {
	attempts      *prometheus.CounterVec
	duration      prometheus.Histogram
	oldestPending prometheus.Gauge
}

// NewMetrics registers the webhook metrics on reg. Registering twice on
// one registry is a wiring bug and panics, as MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesvc_webhook_attempts_total",
			Help: "Webhook delivery attempts, by outcome (succeeded, retry, failed).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "profilesvc_webhook_attempt_duration_seconds",
			Help: "Time receivers took to answer webhook delivery attempts.",
			// Receivers answer in milliseconds to the sender's time-out
			// (seconds), slower than the HTTP server's own requests.
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		oldestPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "profilesvc_webhook_oldest_pending_seconds",
			Help: "Age of the oldest pending webhook delivery; 0 when none is pending.",
		}),
	}
	// Outcomes start at 0, so rate() and alerts see them before the first
	// failure rather than a missing series.
	for _, o := range outcomes {
		m.attempts.WithLabelValues(o)
	}
	reg.MustRegister(m.attempts, m.duration, m.oldestPending)
	return m
}

// Attempt counts one attempt by outcome and records its latency.
func (m *Metrics) Attempt(outcome string, latency time.Duration) {
	if !slices.Contains(outcomes, outcome) {
		outcome = "other"
	}
	m.attempts.WithLabelValues(outcome).Inc()
	m.duration.Observe(latency.Seconds())
}

// OldestPending sets the age of the oldest pending delivery.
func (m *Metrics) OldestPending(age time.Duration) {
	m.oldestPending.Set(max(age, 0).Seconds())
}
