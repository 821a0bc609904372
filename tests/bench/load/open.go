package load

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// OpenPlan is an open-loop run: request n is due at the start plus n/Rate
// seconds, whatever became of the requests before it, and its latency
// counts from when it was due. A server that falls behind shows it in its
// tail, rather than slowing the load down to what it manages (which a
// closed loop does, hiding the wait of the requests it never sent).
type OpenPlan struct {
	Addr string
	// Rate is the requests due per second.
	Rate     float64
	Duration time.Duration
	// Conns bounds the requests in flight: a request due while every
	// connection is busy goes out on the first one free, and that wait is
	// part of its latency.
	Conns int
	// Step returns request n, from 0.
	Step func(n int64) Step
}

// OpenResult is what an open-loop run measured.
type OpenResult struct {
	// Due is the number of requests the run made due, each sent once;
	// Errors of them failed or answered another status than their step's.
	Due, Errors int64
	FirstError  string
	Elapsed     time.Duration
	// Latencies holds each successful request's time from due to answered,
	// sorted.
	Latencies []time.Duration
}

// RunOpen executes p. Connections are dialled before the first request is
// due.
func RunOpen(p OpenPlan) OpenResult {
	due := int64(p.Rate * p.Duration.Seconds())
	res := OpenResult{Due: due}
	conns := make([]*Conn, p.Conns)
	var (
		firstErr sync.Once
		errs     atomic.Int64
		next     atomic.Int64
		lats     = make([][]time.Duration, p.Conns)
		wg       sync.WaitGroup
	)
	fail := func(msg string) {
		errs.Add(1)
		firstErr.Do(func() { res.FirstError = msg })
	}
	for i := range conns {
		conns[i] = NewConn(p.Addr)
		if err := conns[i].Dial(); err != nil {
			fail(err.Error())
		}
	}
	start := time.Now()
	for i, c := range conns {
		wg.Go(func() {
			defer c.Close()
			own := make([]time.Duration, 0, due/int64(len(conns))+1)
			for {
				n := next.Add(1) - 1
				if n >= due {
					break
				}
				at := start.Add(time.Duration(float64(n) / p.Rate * float64(time.Second)))
				time.Sleep(time.Until(at))
				s := p.Step(n)
				status, body, err := c.Do(s.Raw)
				switch {
				case err != nil:
					fail(err.Error())
				case status != s.Want:
					fail(fmt.Sprintf("status %d, want %d: %.200s", status, s.Want, body))
				default:
					own = append(own, time.Since(at))
				}
			}
			lats[i] = own
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Errors = errs.Load()
	res.Latencies = merged(lats)
	return res
}
