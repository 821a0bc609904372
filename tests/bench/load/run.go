package load

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Step is one request of an iteration and the status it must answer.
type Step struct {
	Raw  []byte
	Want int
}

// Plan is a closed-loop run: Conns connections each repeat their script,
// one iteration (all its steps in order) after the other, until Duration
// has passed or Total iterations have completed across all connections.
type Plan struct {
	Addr  string
	Conns int
	// Script returns the steps of connection i, so that connections can
	// work on distinct resources.
	Script   func(i int) []Step
	Duration time.Duration
	Total    int64
}

// Result is what a run measured.
type Result struct {
	Iterations int64
	Errors     int64
	// FirstError describes the first failed step, for the report.
	FirstError string
	Elapsed    time.Duration
	// Latencies holds each successful iteration's duration, sorted.
	Latencies []time.Duration
}

// Throughput is completed iterations per second.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Iterations) / r.Elapsed.Seconds()
}

// Run executes p. Connections are dialled before the clock starts.
func Run(p Plan) Result {
	conns := make([]*Conn, p.Conns)
	scripts := make([][]Step, p.Conns)
	for i := range conns {
		conns[i] = NewConn(p.Addr)
		scripts[i] = p.Script(i)
	}
	var (
		firstErr sync.Once
		res      Result
		errs     atomic.Int64
		started  atomic.Int64
		lats     = make([][]time.Duration, p.Conns)
		wg       sync.WaitGroup
	)
	fail := func(msg string) {
		errs.Add(1)
		firstErr.Do(func() { res.FirstError = msg })
	}
	for _, c := range conns {
		if err := c.Dial(); err != nil {
			fail(err.Error())
		}
	}
	start := time.Now()
	deadline := start.Add(p.Duration)
	for i, c := range conns {
		wg.Go(func() {
			defer c.Close()
			own := make([]time.Duration, 0, 4096)
		iterations:
			for {
				if p.Total > 0 && started.Add(1) > p.Total {
					break
				}
				t0 := time.Now()
				if p.Duration > 0 && !t0.Before(deadline) {
					break
				}
				for _, s := range scripts[i] {
					status, body, err := c.Do(s.Raw)
					if err != nil {
						fail(err.Error())
						continue iterations
					}
					if status != s.Want {
						fail(fmt.Sprintf("status %d, want %d: %.200s", status, s.Want, body))
						continue iterations
					}
				}
				own = append(own, time.Since(t0))
			}
			lats[i] = own
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Errors = errs.Load()
	res.Latencies = merged(lats)
	res.Iterations = int64(len(res.Latencies))
	return res
}
