package notices

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Notices = (*Redis)(nil)

// Redis carries notices over one Redis pub/sub channel that every instance
// subscribes to. go-redis reconnects a subscription by itself and says
// nothing of the messages published meanwhile, so the adapter reads every
// reply itself: an error makes it deaf, each subscribe confirmation (the
// first and every one after a reconnection) makes it listen again.
type Redis struct {
	client  redis.UniversalClient
	channel string
	log     *zap.Logger
	hub     *hub
	// probeEvery is how long a silent connection goes before it is pinged,
	// and twice it how long an unanswered one is trusted: a Redis that is
	// unreachable without closing the connection is noticed within it.
	probeEvery time.Duration

	stop context.CancelFunc
	done chan struct{}
	// ps is the subscription of the moment, closed by Stop: go-redis does
	// not watch the context while it waits for a message.
	mu sync.Mutex
	ps *redis.PubSub
}

// RedisOptions tunes a Redis adapter; zero values take the defaults.
type RedisOptions struct {
	// ProbeEvery defaults to 2 s.
	ProbeEvery time.Duration
}

// NewRedis returns notices over channel of client. Nothing is heard
// before Start.
func NewRedis(client redis.UniversalClient, channel string, log *zap.Logger, o RedisOptions) *Redis {
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 2 * time.Second
	}
	return &Redis{client: client, channel: channel, log: log, hub: newHub(false), probeEvery: o.ProbeEvery}
}

// Publish sends payload to every instance subscribed to the channel.
func (r *Redis) Publish(ctx context.Context, topic, payload string) error {
	if err := checkNotice(topic, payload); err != nil {
		return err
	}
	if err := r.client.Publish(ctx, r.channel, Wire(topic, payload)).Err(); err != nil {
		return fmt.Errorf("notices: publishing to redis: %w", err)
	}
	return nil
}

// Subscribe calls h with every notice of topic until cancel is called.
func (r *Redis) Subscribe(topic string, h func(ports.Notice)) (cancel func()) {
	return r.hub.subscribe(topic, h)
}

// Start subscribes in the background and keeps the subscription up until
// Stop; it does not wait for Redis.
func (r *Redis) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	go r.run(ctx)
}

// Stop ends the subscription and waits for its goroutine.
func (r *Redis) Stop() {
	if r.stop == nil {
		return
	}
	r.stop()
	r.mu.Lock()
	if r.ps != nil {
		_ = r.ps.Close()
	}
	r.mu.Unlock()
	<-r.done
}

func (r *Redis) run(ctx context.Context) {
	defer close(r.done)
	var retry backoff
	for ctx.Err() == nil {
		err := r.listen(ctx, &retry)
		r.hub.setListening(false)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("notices: redis subscription lost; caches fed by it are dropped", zap.Error(err))
		if !retry.wait(ctx) {
			return
		}
	}
}

// listen runs one subscription until it fails.
func (r *Redis) listen(ctx context.Context, retry *backoff) error {
	ps := r.client.Subscribe(ctx, r.channel)
	r.mu.Lock()
	r.ps = ps
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.ps = nil
		r.mu.Unlock()
		_ = ps.Close()
	}()
	lastHeard := time.Now()
	for {
		msg, err := ps.ReceiveTimeout(ctx, r.probeEvery)
		if err != nil {
			var netErr interface{ Timeout() bool }
			if !errors.As(err, &netErr) || !netErr.Timeout() || ctx.Err() != nil {
				return err
			}
			if time.Since(lastHeard) >= 2*r.probeEvery {
				return fmt.Errorf("no answer from redis for %s", time.Since(lastHeard).Round(time.Millisecond))
			}
			if err := ps.Ping(ctx); err != nil {
				return err
			}
			continue
		}
		lastHeard = time.Now()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				retry.reset()
				r.log.Info("notices: listening", zap.String("channel", r.channel))
				r.hub.setListening(true)
			}
		case *redis.Message:
			topic, payload, err := unwire(m.Payload)
			if err != nil {
				r.log.Warn("notices: dropped a malformed message", zap.Error(err))
				continue
			}
			r.hub.deliver(topic, payload)
		}
	}
}

// backoff spaces reconnections: 50 ms doubling to 5 s, reset on success.
type backoff struct{ next time.Duration }

func (b *backoff) reset() { b.next = 0 }

// wait sleeps for the next delay, or returns false when ctx ends first.
func (b *backoff) wait(ctx context.Context) bool {
	b.next = min(max(2*b.next, 50*time.Millisecond), 5*time.Second)
	t := time.NewTimer(b.next)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
