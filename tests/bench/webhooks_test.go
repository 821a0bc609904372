package bench_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkWebhookDelivery measures the pipeline against a local receiver:
// each iteration commits one event (a profile creation) and the benchmark
// ends when the receiver has every delivery. It reports deliveries per
// second and the latency from the event's commit (its created_at) to the
// first attempt's arrival, p50 and p99.
//
// "steady" commits from one client, so latency is the pipeline's own;
// "burst" commits from eight at once, faster than one endpoint takes them
// (at most 4 attempts in flight per endpoint), so latency includes the
// queue that builds up.
func BenchmarkWebhookDelivery(b *testing.B) {
	for name, url := range backends() {
		for mode, clients := range map[string]int{"steady": 1, "burst": 8} {
			b.Run(name+"/"+mode, func(b *testing.B) { benchmarkDelivery(b, url(b), clients) })
		}
	}
}

func benchmarkDelivery(b *testing.B, url string, clients int) {
	{
		{
			var mu sync.Mutex
			var lat []time.Duration
			arrived := make(chan struct{}, 1<<16)
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				now := time.Now()
				var p struct {
					CreatedAt time.Time `json:"created_at"`
				}
				body, _ := io.ReadAll(r.Body)
				if json.Unmarshal(body, &p) == nil {
					mu.Lock()
					lat = append(lat, now.Sub(p.CreatedAt))
					mu.Unlock()
				}
				arrived <- struct{}{}
			}))
			b.Cleanup(receiver.Close)
			s := boot(b, url, "ALLOW_PRIVATE_TARGETS", "true", "LOG_LEVEL", "error")
			s.call(b, http.MethodPost, "/v1/webhooks", map[string]any{"url": receiver.URL, "events": []string{"profile.created"}, "secret": "bench-webhook-secret-0123456789abcdef"}, http.StatusCreated, nil)

			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						body := fmt.Sprintf(`{"name":"hook %d","templateId":"tpl_chrome_win_us","proxy":null}`, i)
						if status := s.send(http.MethodPost, "/api/v1/profiles", body); status != http.StatusCreated {
							b.Errorf("create: status %d", status)
							return
						}
					}
				})
			}
			wg.Wait()
			deadline := time.After(time.Minute)
			for range b.N {
				select {
				case <-arrived:
				case <-deadline:
					b.Fatal("deliveries did not all arrive within a minute")
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		}
	}
}
