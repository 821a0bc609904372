package profilecache

import (
	"context"
	"sync"
)

// getBatch sends the plain GETs of concurrent readers to Redis together:
// one pipeline (one write and one read on one connection) for every reader
// waiting, one pipeline at a time. Each GET on its own cost the service a
// write and a read system call and Redis a request of its own; under load
// most of a cache hit's cost was that round trip.
//
// The reader that finds no pipeline running sends one with every GET
// queued; when it is answered, the first reader queued since (if any)
// sends the next, and so on. A reader waits at most for the pipeline in
// flight and its own, each bounded by the client's timeouts.
type getBatch struct {
	// send runs the GETs of keys as one pipeline and returns, for each key,
	// its value or its error, or one error for the whole pipeline.
	send func(ctx context.Context, keys []string) ([]getResult, error)

	mu      sync.Mutex
	queue   []*queuedGet
	running bool
}

type getResult struct {
	val string
	err error
}

type queuedGet struct {
	key string
	getResult
	// lead is set when the reader is to send the next pipeline rather
	// than read its answer.
	lead  bool
	ready chan struct{}
}

// get returns the value of key, or redis.Nil when there is none, or the
// error of its pipeline.
func (b *getBatch) get(ctx context.Context, key string) (string, error) {
	q := &queuedGet{key: key, ready: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, q)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if !lead {
		<-q.ready
		if !q.lead {
			return q.val, q.err
		}
	}
	b.sendQueued(ctx)
	return q.val, q.err
}

// sendQueued sends the queued GETs, the caller's among them, then hands the
// next pipeline to the first reader queued meanwhile and wakes the readers
// answered.
func (b *getBatch) sendQueued(ctx context.Context) {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()

	keys := make([]string, len(batch))
	for i, q := range batch {
		keys[i] = q.key
	}
	// The pipeline answers other readers too: the sender's request ending
	// must not cut it short (the client's timeouts bound it).
	results, err := b.send(context.WithoutCancel(ctx), keys)
	for i, q := range batch {
		switch {
		case err != nil:
			q.err = err
		default:
			q.getResult = results[i]
		}
	}

	b.mu.Lock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		next.lead = true
		close(next.ready)
	} else {
		b.running = false
	}
	b.mu.Unlock()
	for _, q := range batch {
		if q.lead {
			continue // the sender, or a reader already woken to lead
		}
		close(q.ready)
	}
}
