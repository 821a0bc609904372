package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/ids"
	"github.com/profilesvc/profilesvc/adapters/secretbox"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	webhookhttp "github.com/profilesvc/profilesvc/adapters/webhook"
	"github.com/profilesvc/profilesvc/application/webhooks"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// BenchmarkBurstDrain commits a burst of 20,000 events for one endpoint of
// a fast local receiver on PostgreSQL, then runs the dispatcher and reports
// the deliveries per second overall and over the first and the last 5,000
// arrivals: a claim whose cost grew with the backlog would drain the first
// quarter slower than the last. Each iteration is one whole burst.
func BenchmarkBurstDrain(b *testing.B) {
	const burst, quarter = 20_000, 5_000
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		s, err := bunstore.Open(ctx, testenv.StoreOptions(b, testenv.PostgresURL(b)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		var (
			mu       sync.Mutex
			arrivals []time.Time
			all      = make(chan struct{})
		)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			if len(arrivals) == burst {
				close(all)
			}
			mu.Unlock()
		}))
		b.Cleanup(receiver.Close)
		box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			b.Fatal(err)
		}
		sender := webhookhttp.NewSender(webhookhttp.Options{AllowPrivate: true})
		b.Cleanup(sender.CloseIdleConnections)
		svc := webhooks.New(webhooks.Deps{
			Tx: s, Teams: s.Teams(), Endpoints: s.WebhookEndpoints(), Deliveries: s.Deliveries(), Outbox: s.Outbox(),
			Sender: sender, Box: box, Metrics: webhookhttp.NewMetrics(prometheus.NewRegistry()),
			Clock: clock.System{}, IDs: ids.NewULID(clock.System{}), Log: slog.New(slog.DiscardHandler),
			Policy: webhooks.Policy{
				Schedule: webhook.Schedule{0, 5 * time.Second}, AllowPrivateTargets: true, LeaseTTL: 20 * time.Second,
			},
		})
		now := time.Now().UTC()
		if err := s.Teams().Create(ctx, team.Team{ID: "team_bench", Name: "bench", CreatedAt: now}); err != nil {
			b.Fatal(err)
		}
		admin := team.Actor{UserID: "usr_bench", TeamID: "team_bench", MemberID: "mem_bench", Role: team.RoleOwner}
		if _, err := svc.Create(ctx, admin, webhooks.CreateInput{URL: receiver.URL, Events: []string{"*"},
			Secret: "bench-webhook-secret-0123456789abcdef"}); err != nil {
			b.Fatal(err)
		}
		err = s.Do(ctx, func(ctx context.Context) error {
			for i := range burst {
				e, err := event.New(fmt.Sprintf("evt_%08d", i), "team_bench", event.ProfileCreated, now, map[string]any{"n": i})
				if err != nil {
					return err
				}
				if err := s.Outbox().Append(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}

		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		b.StartTimer()
		start := time.Now()
		go func() {
			defer close(done)
			svc.Run(runCtx)
		}()
		select {
		case <-all:
		case <-time.After(5 * time.Minute):
			b.Fatal("the burst did not drain within five minutes")
		}
		b.StopTimer()
		stop()
		<-done
		mu.Lock()
		total := arrivals[burst-1].Sub(start)
		first := arrivals[quarter-1].Sub(arrivals[0])
		last := arrivals[burst-1].Sub(arrivals[burst-quarter])
		mu.Unlock()
		b.ReportMetric(burst/total.Seconds(), "deliveries/s")
		b.ReportMetric(quarter/first.Seconds(), "first5k/s")
		b.ReportMetric(quarter/last.Seconds(), "last5k/s")
	}
}
