//go:build linux

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

// ids are the events that have arrived, in every phase.
func (r *receiver) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.seen))
	for id := range r.seen {
		out = append(out, id)
	}
	return out
}

func (r *receiver) snapshot() ([]time.Time, []time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.arrivals), slices.Clone(r.lags), r.repeats
}

// waitFor polls until n events have arrived in this phase or the limit
// passes.
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
	burst      int
	steadyRate int
	steadyFor  time.Duration
	// burstFor bounds the burst: creating it and waiting for it to drain,
	// so a slow pipeline cannot stretch the run.
	burstFor time.Duration
	conns    int
}

// hookFigure is what the webhook measurements found on one backend.
type hookFigure struct {
	backend string
	// steady: creates at a steady rate with delivery on.
	steadyOK      int64
	steadyArrived int
	p50, p99      float64
	// alongside: the burst of creates with delivery on in the same
	// instance; deliveries/s from the first create to the last arrival.
	created          int
	createRate       float64
	alongsideArrived int
	alongsideRate    float64
	// backlog: the burst queued by an instance with delivery off, then
	// drained by one with it on; deliveries/s from that one's start.
	queued, arrived           int
	queueRate                 float64
	rate, firstRate, lastRate float64
	window                    int
	// recorded of expected arrivals (every phase) have their attempt
	// recorded.
	recorded, expected int
	unfinished         int
	repeats            int
	problems           []string
}

// measureHooks subscribes the webhook team of in to profile.created on
// rcv, then measures a steady rate, a burst delivered alongside its
// creates, and the pipeline alone on a queued backlog of the same size.
// The steady rate comes first: it measures the pipeline's own latency,
// which whatever a slow pipeline had left of a burst would otherwise
// swamp. The backlog restarts the instance: in.proc is the one that
// drained it.
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

	fmt.Fprintf(os.Stderr, "webhooks on %s: %d/s for %v\n", in.name, o.steadyRate, o.steadyFor)
	rcv.reset()
	sent, ok := paced(in.addr, create[0], o.steadyRate, o.steadyFor)
	f.steadyOK = ok
	if ok < sent {
		f.problems = append(f.problems, fmt.Sprintf("steady: %d of %d creates failed", sent-ok, sent))
	}
	if !rcv.waitFor(ctx, int(ok), 30*time.Second) {
		f.problems = append(f.problems, fmt.Sprintf("steady: %d of %d events arrived within 30s of the last create", rcv.count(), ok))
	}
	_, lags, _ := rcv.snapshot()
	slices.Sort(lags)
	f.steadyArrived = len(lags)
	f.p50, f.p99 = ms(load.Percentile(lags, 50)), ms(load.Percentile(lags, 99))

	fmt.Fprintf(os.Stderr, "webhooks on %s: burst of %d creates, delivered alongside\n", in.name, o.burst)
	rcv.reset()
	t0 := time.Now()
	burst := load.Run(load.Plan{Addr: in.addr, Conns: o.conns, Total: int64(o.burst), Duration: o.burstFor, Script: same(create)})
	f.created, f.createRate = int(burst.Iterations), burst.Throughput()
	f.problems = append(f.problems, burstProblems("alongside", burst, o)...)
	if !rcv.waitFor(ctx, f.created, o.burstFor-time.Since(t0)) {
		f.problems = append(f.problems, fmt.Sprintf("alongside: %d of %d events arrived within %v", rcv.count(), f.created, o.burstFor))
	}
	arrivals, _, _ := rcv.snapshot()
	f.alongsideArrived = len(arrivals)
	if last := latest(arrivals); !last.IsZero() {
		f.alongsideRate = float64(len(arrivals)) / last.Sub(t0).Seconds()
	}

	if err := f.backlog(ctx, in, rcv, create, o); err != nil {
		return nil, err
	}

	// Every event that arrived must have its attempt recorded; completion
	// may be batched after the answer, so look again for a while.
	deadline := time.Now().Add(20 * time.Second)
	for {
		arrived := rcv.ids()
		recorded, unfinished, err := recordedEvents(in.addr, key, ep.Data.ID)
		if err != nil {
			return nil, err
		}
		f.expected, f.recorded, f.unfinished = len(arrived), 0, unfinished
		for _, id := range arrived {
			if recorded[id] {
				f.recorded++
			}
		}
		if f.recorded == f.expected || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	_, _, f.repeats = rcv.snapshot()
	return f, nil
}

// backlog queues the burst's creates through an instance with
// WEBHOOK_DELIVERY=off, stops it, and starts one with delivery on on the
// same database and address: deliveries/s count from that start (process
// launch, migrations check included) to the last arrival. The first
// instance is stopped before the second starts because a SQLite file
// takes one process at a time; PostgreSQL is run the same way so the rows
// compare.
func (f *hookFigure) backlog(ctx context.Context, in *instance, rcv *receiver, create []load.Step, o hookOptions) error {
	fmt.Fprintf(os.Stderr, "webhooks on %s: burst of %d creates queued with delivery off, then drained\n", in.name, o.burst)
	in.proc.stop()
	t0 := time.Now()
	off, err := start(in.bin, []string{"serve"}, append(slices.Clone(in.env), "WEBHOOK_DELIVERY=off"), in.log+".off")
	if err != nil {
		return err
	}
	if _, err := waitHealthy(ctx, off, in.addr, t0, time.Minute); err != nil {
		off.stop()
		return fmt.Errorf("the instance with delivery off: %w", err)
	}
	rcv.reset()
	burst := load.Run(load.Plan{Addr: in.addr, Conns: o.conns, Total: int64(o.burst), Duration: o.burstFor, Script: same(create)})
	f.queued, f.queueRate = int(burst.Iterations), burst.Throughput()
	f.problems = append(f.problems, burstProblems("backlog", burst, o)...)
	off.stop()
	if n := rcv.count(); n > 0 {
		f.problems = append(f.problems, fmt.Sprintf("backlog: %d events arrived from the instance with delivery off", n))
	}

	t0 = time.Now()
	if in.proc, err = start(in.bin, []string{"serve"}, in.env, in.log); err != nil {
		return err
	}
	if _, err := waitHealthy(ctx, in.proc, in.addr, t0, time.Minute); err != nil {
		return fmt.Errorf("the instance with delivery on: %w", err)
	}
	if !rcv.waitFor(ctx, f.queued, o.burstFor-time.Since(t0)) {
		f.problems = append(f.problems, fmt.Sprintf("backlog: %d of %d events arrived within %v of the start", rcv.count(), f.queued, o.burstFor))
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
	return nil
}

// burstProblems names what went wrong with a burst of creates.
func burstProblems(phase string, burst load.Result, o hookOptions) []string {
	var out []string
	if burst.Errors > 0 {
		out = append(out, fmt.Sprintf("%s: %d creates failed: %s", phase, burst.Errors, burst.FirstError))
	}
	if int(burst.Iterations) < o.burst {
		out = append(out, fmt.Sprintf("%s: %d of %d created within %v", phase, burst.Iterations, o.burst, o.burstFor))
	}
	return out
}

// latest is the last of arrivals, zero for none.
func latest(arrivals []time.Time) time.Time {
	var last time.Time
	for _, a := range arrivals {
		if a.After(last) {
			last = a
		}
	}
	return last
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

// recordedEvents pages through the endpoint's deliveries: the events of
// those that succeeded with their attempt recorded, and the number not
// finished yet.
func recordedEvents(addr string, key [2]string, endpoint string) (recorded map[string]bool, unfinished int, err error) {
	recorded = map[string]bool{}
	for _, status := range []string{"succeeded", "pending", "failed"} {
		cursor := ""
		for {
			var page struct {
				Data []struct {
					EventID  string            `json:"eventId"`
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
				return nil, 0, err
			}
			for _, d := range page.Data {
				switch {
				case status != "succeeded":
					unfinished++
				case len(d.Attempts) > 0:
					recorded[d.EventID] = true
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
