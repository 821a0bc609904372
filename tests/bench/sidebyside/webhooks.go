package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

// receiver is the fast local webhook receiver: it answers 200 at once and
// notes each event's first arrival and its lag behind the event's
// created_at.
type receiver struct {
	addr string
	srv  *http.Server

	mu       sync.Mutex
	seen     map[string]bool
	arrivals []time.Time
	lags     []time.Duration
	repeats  int
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), seen: map[string]bool{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(req.Body)
	var p struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	if err != nil {
		http.Error(w, "unreadable", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	if r.seen[p.ID] {
		r.repeats++
	} else {
		r.seen[p.ID] = true
		r.arrivals = append(r.arrivals, now)
		r.lags = append(r.lags, now.Sub(p.CreatedAt))
	}
	r.mu.Unlock()
}

// reset starts a new phase; events already seen stay seen.
func (r *receiver) reset() {
	r.mu.Lock()
	r.arrivals, r.lags = nil, nil
	r.mu.Unlock()
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrivals)
}

func (r *receiver) snapshot() ([]time.Time, []time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.arrivals), slices.Clone(r.lags), r.repeats
}

// waitFor polls until n events have arrived or the deadline passes.
func (r *receiver) waitFor(ctx context.Context, n int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for r.count() < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// hookOptions size the webhook measurements.
type hookOptions struct {
	burst                int
	steadyRate           int
	steadyFor, burstWait time.Duration
	conns                int
}

// hookFigure is what the webhook measurements found on one backend.
type hookFigure struct {
	backend                   string
	created, arrived          int
	createErrors              int64
	createRate                float64
	rate, firstRate, lastRate float64
	window                    int
	steadySent, steadyOK      int64
	steadyArrived             int
	p50, p99                  float64
	recorded, expected        int
	unfinished                int
	repeats                   int
	problems                  []string
}

// measureHooks subscribes the webhook team of in to profile.created on
// the receiver, then times a burst of creates and a steady rate.
func measureHooks(ctx context.Context, in *instance, rcv *receiver, o hookOptions) (*hookFigure, error) {
	f := &hookFigure{backend: in.name}
	key := [2]string{"X-API-Key", in.hookKey}
	var ep struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := api(in.addr, "POST", "/v1/webhooks", key, map[string]any{"url": "http://" + rcv.addr + "/" + in.key, "events": []string{"profile.created"}, "secret": "bench-webhook-secret-0123456789abcdef"}, 201, &ep); err != nil {
		return nil, err
	}
	create := steps(in.addr, 201, load.Request{Method: "POST", Path: "/api/v1/profiles", Header: [][2]string{key}, Body: []byte(createBody)})

	fmt.Fprintf(os.Stderr, "webhooks on %s: burst of %d creates\n", in.name, o.burst)
	rcv.reset()
	t0 := time.Now()
	burst := load.Run(load.Plan{Addr: in.addr, Conns: o.conns, Total: int64(o.burst), Script: same(create)})
	f.created, f.createErrors, f.createRate = int(burst.Iterations), burst.Errors, burst.Throughput()
	if burst.Errors > 0 {
		f.problems = append(f.problems, fmt.Sprintf("%d creates failed: %s", burst.Errors, burst.FirstError))
	}
	if !rcv.waitFor(ctx, f.created, o.burstWait) {
		f.problems = append(f.problems, fmt.Sprintf("burst: %d of %d events arrived within %v", rcv.count(), f.created, o.burstWait))
	}
	arrivals, _, _ := rcv.snapshot()
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	f.arrived = len(arrivals)
	if n := len(arrivals); n > 1 {
		f.rate = float64(n) / arrivals[n-1].Sub(t0).Seconds()
		f.window = min(5000, n/2)
		f.firstRate = drain(arrivals[:f.window])
		f.lastRate = drain(arrivals[n-f.window:])
	}

	fmt.Fprintf(os.Stderr, "webhooks on %s: %d/s for %v\n", in.name, o.steadyRate, o.steadyFor)
	rcv.reset()
	f.steadySent, f.steadyOK = paced(in.addr, create[0], o.steadyRate, o.steadyFor)
	if f.steadyOK < f.steadySent {
		f.problems = append(f.problems, fmt.Sprintf("steady: %d of %d creates failed", f.steadySent-f.steadyOK, f.steadySent))
	}
	if !rcv.waitFor(ctx, int(f.steadyOK), time.Minute) {
		f.problems = append(f.problems, fmt.Sprintf("steady: %d of %d events arrived within a minute", rcv.count(), f.steadyOK))
	}
	_, lags, repeats := rcv.snapshot()
	slices.Sort(lags)
	f.steadyArrived, f.repeats = len(lags), repeats
	f.p50, f.p99 = ms(load.Percentile(lags, 50)), ms(load.Percentile(lags, 99))

	// Attempts are recorded after the receiver answers (batched), so poll.
	f.expected = f.created + int(f.steadyOK)
	deadline := time.Now().Add(time.Minute)
	for {
		recorded, unfinished, err := countRecorded(in.addr, key, ep.Data.ID)
		if err != nil {
			return nil, err
		}
		f.recorded, f.unfinished = recorded, unfinished
		if recorded >= f.expected || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return f, nil
}

// drain is the arrival rate across a window of sorted arrivals.
func drain(window []time.Time) float64 {
	span := window[len(window)-1].Sub(window[0])
	if span <= 0 {
		return 0
	}
	return float64(len(window)-1) / span.Seconds()
}

// paced sends raw at rate per second for d from a few connections (open
// loop: the schedule does not wait for answers) and counts the 201s.
func paced(addr string, s load.Step, rate int, d time.Duration) (sent, ok int64) {
	const workers = 8
	queue := make(chan struct{}, rate*int(d/time.Second)+1)
	var okCount atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			c := load.NewConn(addr)
			defer c.Close()
			for range queue {
				if status, _, err := c.Do(s.Raw); err == nil && status == s.Want {
					okCount.Add(1)
				}
			}
		})
	}
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range int64(rate) * int64(d/time.Second) {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		queue <- struct{}{}
		sent++
	}
	close(queue)
	wg.Wait()
	return sent, okCount.Load()
}

// countRecorded pages through the endpoint's deliveries: those that
// succeeded with their attempt recorded, and those not yet finished.
func countRecorded(addr string, key [2]string, endpoint string) (recorded, unfinished int, err error) {
	for _, status := range []string{"succeeded", "pending", "failed"} {
		cursor := ""
		for {
			var page struct {
				Data []struct {
					Attempts []json.RawMessage `json:"attempts"`
				} `json:"data"`
				Meta struct {
					NextCursor *string `json:"nextCursor"`
				} `json:"meta"`
			}
			path := "/v1/webhooks/" + endpoint + "/deliveries?limit=100&status=" + status
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			if err := api(addr, "GET", path, key, nil, 200, &page); err != nil {
				return 0, 0, err
			}
			for _, d := range page.Data {
				if status == "succeeded" && len(d.Attempts) > 0 {
					recorded++
				} else if status != "succeeded" {
					unfinished++
				}
			}
			if page.Meta.NextCursor == nil {
				break
			}
			cursor = *page.Meta.NextCursor
		}
	}
	return recorded, unfinished, nil
}
