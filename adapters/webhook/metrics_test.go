package webhook

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the registry's metric families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)

	// Every known outcome is exported from the start, at zero.
	attempts := gather(t, reg)["profilesvc_webhook_attempts_total"]
	if attempts == nil || len(attempts.GetMetric()) != 3 {
		t.Fatalf("attempts before any attempt: %v", attempts)
	}

	m.Attempt("succeeded", 120*time.Millisecond)
	m.Attempt("succeeded", 30*time.Millisecond)
	m.Attempt("retry", 5*time.Second)
	m.Attempt("bogus", time.Millisecond)
	m.OldestPending(90 * time.Second)

	fams := gather(t, reg)
	got := map[string]float64{}
	for _, mt := range fams["profilesvc_webhook_attempts_total"].GetMetric() {
		got[mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
	}
	want := map[string]float64{"succeeded": 2, "retry": 1, "failed": 0, "other": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attempts{outcome=%q} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("attempt outcomes %v, want %v", got, want)
	}

	h := fams["profilesvc_webhook_attempt_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 4 || h.GetSampleSum() < 5.150 || h.GetSampleSum() > 5.152 {
		t.Errorf("duration count %d sum %v, want 4 and 5.151", h.GetSampleCount(), h.GetSampleSum())
	}
	if v := fams["profilesvc_webhook_oldest_pending_seconds"].GetMetric()[0].GetGauge().GetValue(); v != 90 {
		t.Errorf("oldest pending = %v, want 90", v)
	}

	m.OldestPending(0)
	if v := gather(t, reg)["profilesvc_webhook_oldest_pending_seconds"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("oldest pending = %v with none pending, want 0", v)
	}
}
