package wiring

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/secretbox"
	webhookhttp "github.com/profilesvc/profilesvc/adapters/webhook"
	"github.com/profilesvc/profilesvc/application/webhooks"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// DispatcherPoll is how often an idle dispatcher looks for work committed
// by other instances; its own commits wake it at once. Tests shorten it
// (fx.Decorate) when they move the fake clock.
type DispatcherPoll time.Duration

const defaultDispatcherPoll = DispatcherPoll(time.Second)

// PruneInterval is how often each instance deletes the webhook rows
// WEBHOOK_RETENTION has outlived. Tests shorten it (fx.Decorate).
type PruneInterval time.Duration

// defaultPruneInterval keeps each run's batches few: a few minutes of
// deliveries at a time.
const defaultPruneInterval = PruneInterval(5 * time.Minute)

// WebhookDeps are the ports of the webhook use cases.
type WebhookDeps struct {
	fx.In
	Store   storage.Store
	Tx      ports.UnitOfWork
	Sender  ports.WebhookSender
	Box     ports.SecretBox
	Metrics ports.WebhookMetrics
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Waker   *webhooks.Waker
	Queued  ports.DeliveriesNotifier
	Config  config.Config
	Poll    DispatcherPoll
}

// Webhooks provides the webhook use cases, the sender with its SSRF guard,
// the secret box, the dispatcher and the pruner (started and drained with
// the app unless WEBHOOK_DELIVERY is off), and the store decoration that
// wakes the dispatchers when events commit.
var Webhooks = fx.Options(
	fx.Module("webhooks",
		fx.Provide(
			func(lc fx.Lifecycle, cfg config.Config) ports.WebhookSender {
				sender := webhookhttp.NewSender(webhookhttp.Options{Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.AllowPrivateTargets})
				// Registered before the dispatcher's hook, so it runs after
				// the dispatcher has stopped using the pool.
				lc.Append(fx.Hook{OnStop: func(context.Context) error {
					sender.CloseIdleConnections()
					return nil
				}})
				return sender
			},
			func(cfg config.Config) (ports.SecretBox, error) { return secretbox.New(cfg.SecretKey) },
			func(reg *prometheus.Registry) ports.WebhookMetrics { return webhookhttp.NewMetrics(reg) },
			func() DispatcherPoll { return defaultDispatcherPoll },
			func() PruneInterval { return defaultPruneInterval },
			func(d WebhookDeps) *webhooks.Service {
				timeout := d.Config.WebhookTimeout
				return webhooks.New(webhooks.Deps{
					Tx: d.Tx, Teams: d.Store.Teams(), Endpoints: d.Store.WebhookEndpoints(), Deliveries: d.Store.Deliveries(), Outbox: d.Store.Outbox(),
					Sender: d.Sender, Box: d.Box, Metrics: d.Metrics, Clock: d.Clock, IDs: d.IDs, Log: d.Log, Waker: d.Waker, Queued: d.Queued,
					Policy: webhooks.Policy{
						Schedule:            webhook.Schedule(d.Config.WebhookRetrySchedule),
						AllowPrivateTargets: d.Config.AllowPrivateTargets,
						// Long enough for any attempt to finish and be recorded.
						LeaseTTL:     2*timeout + 10*time.Second,
						PollInterval: time.Duration(d.Poll),
						MaxEndpoints: d.Config.Quotas.WebhookEndpoints,
						Retention:    d.Config.WebhookRetention,
					},
				})
			},
			fx.Annotate(func(svc *webhooks.Service) Routes { return httpapi.NewWebhookHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
		),
		fx.Invoke(startPipeline),
	),
	// At the root: every module appends its events to the webhook
	// service, which queues their deliveries in the same unit and tells
	// the broadcast once it has committed.
	fx.Provide(webhooks.NewWaker, newCommitBroadcast,
		func(b *commitBroadcast) ports.DeliveriesNotifier { return b },
		func(svc *webhooks.Service) ports.Outbox { return svc }),
)

// eventsTopic carries "deliveries were queued" to every instance, so that
// a commit on one wakes the dispatchers of all (each claims its share)
// rather than only its own, the others finding the deliveries at their
// next poll.
const eventsTopic = "webhooks.events"

// commitBroadcast wakes this instance's dispatcher at once when a unit that
// queued deliveries commits, and tells the other instances through notices (LISTEN/
// NOTIFY on PostgreSQL, pub/sub with Redis). Commits during a publish are
// told by the next one: one publish at a time whatever the commit rate, so
// the notices cost stays bounded under a burst of creates.
type commitBroadcast struct {
	// wake wakes this instance's dispatcher.
	wake func()
	// self is what this instance's notices carry, so that it does not
	// hear its own: its commits woke its dispatcher already, and hearing
	// them again cost a second claim, finding nothing, for each notice.
	self    string
	notices ports.Notices
	log     *zap.Logger
	pending atomic.Bool
	running atomic.Bool
	// spacing is the least time from one notice to the next (0: none),
	// and pause waits it out.
	spacing time.Duration
	pause   func(time.Duration)
}

// noticeSpacing bounds the notices of a stream of commits to a hundred a
// second: sent back to back, one per publish round trip, they were about
// one per create under load, each also heard by every instance; every 2 ms,
// publishing and hearing them still took 4% of the service's CPU under a
// stream of creates, besides Redis's own. The other instances learn of a commit at most this much
// later, well within the 50 ms an event may take to its first attempt;
// this instance's own dispatcher is woken at once.
const noticeSpacing = 10 * time.Millisecond

func newCommitBroadcast(lc fx.Lifecycle, cfg config.Config, w *webhooks.Waker, n ports.Notices, log *zap.Logger) *commitBroadcast {
	b := &commitBroadcast{wake: w.Wake, self: rand.Text(), notices: n, log: log.Named("webhooks"), spacing: noticeSpacing, pause: time.Sleep}
	if !cfg.WebhookDelivery {
		// No dispatcher here to wake: only the other instances are told.
		b.wake = func() {}
		return b
	}
	var cancel func()
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			cancel = b.listen()
			return nil
		},
		OnStop: func(context.Context) error {
			if cancel != nil {
				cancel()
			}
			return nil
		},
	})
	return b
}

// listen wakes the dispatcher on every other instance's notice, until
// cancel.
func (b *commitBroadcast) listen() (cancel func()) {
	return b.notices.Subscribe(eventsTopic, b.hear)
}

// hear wakes the dispatcher on another instance's notice, or when hearing
// is (re)gained after notices may have been missed: either way there may
// be deliveries due.
func (b *commitBroadcast) hear(nt ports.Notice) {
	switch {
	case nt.Kind == ports.NoticeDeaf:
	case nt.Kind == ports.NoticeMessage && nt.Payload == b.self:
	default:
		b.wake()
	}
}

// DeliveriesQueued is told after a unit that queued deliveries has
// committed.
func (b *commitBroadcast) DeliveriesQueued() {
	b.wake()
	b.pending.Store(true)
	if b.running.CompareAndSwap(false, true) {
		go b.publish()
	}
}

// publish sends one notice per round of commits until none is pending,
// at most one per spacing.
func (b *commitBroadcast) publish() {
	var last time.Time
	for {
		for b.pending.Swap(false) {
			if wait := b.spacing - time.Since(last); b.spacing > 0 && wait > 0 {
				b.pause(wait)
				b.pending.Store(false) // the commits meanwhile are told by this notice
			}
			last = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := b.notices.Publish(ctx, eventsTopic, b.self); err != nil {
				b.log.Warn("telling other instances of queued deliveries failed; they find them at their next poll", zap.Error(err))
			}
			cancel()
		}
		b.running.Store(false)
		// A commit between the last Swap and the Store found running
		// set and left its notice to this loop.
		if !b.pending.Load() || !b.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// startPipeline runs the dispatcher and the pruner, unless
// WEBHOOK_DELIVERY is off: such an instance only serves the API and queues
// deliveries with its writes, for the instances with it on that share its
// database to deliver and prune.
func startPipeline(lc fx.Lifecycle, cfg config.Config, svc *webhooks.Service, every PruneInterval, log *slog.Logger) {
	if !cfg.WebhookDelivery {
		return
	}
	startDispatcher(lc, svc)
	startPruner(lc, svc, every, log)
}

func startDispatcher(lc fx.Lifecycle, svc *webhooks.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Go(func() { svc.Run(ctx) })
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			wg.Wait()
			return nil
		},
	})
}

// startPruner prunes on every delivering instance, at start and then every interval
// until the app stops: the store's batches delete only rows that no longer
// change, so instances pruning at once only share the work.
func startPruner(lc fx.Lifecycle, svc *webhooks.Service, every PruneInterval, log *slog.Logger) {
	runEvery(lc, time.Duration(every), func(ctx context.Context) {
		if n, err := svc.Prune(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "webhook retention", "error", err.Error(), "deleted", n)
		} else if n > 0 {
			log.InfoContext(ctx, "webhook retention deleted old events and deliveries", "deleted", n)
		}
	})
}
