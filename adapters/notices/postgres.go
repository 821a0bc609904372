package notices

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Notices = (*Postgres)(nil)

// Postgres carries notices over PostgreSQL LISTEN/NOTIFY on one channel.
// Each instance holds one connection of its own (pgx, outside the store's
// pool, which would hand a listening connection to other queries) that
// listens to the channel and is reopened with a backoff when it is lost;
// every topic is multiplexed over it.
//
// A NOTIFY issued inside a transaction is delivered when the transaction
// commits, and not at all if it rolls back: a unit of work that runs
// `SELECT pg_notify(channel, notices.Wire(topic, payload))` on its own
// transaction wakes every instance exactly when its rows become visible.
type Postgres struct {
	dsn     string
	channel string
	exec    Execer
	log     *zap.Logger
	hub     *hub
	// probeEvery is how long a silent connection goes before it is
	// pinged: a database that is unreachable without closing the
	// connection is noticed within about twice it.
	probeEvery time.Duration
	appName    string

	stop context.CancelFunc
	done chan struct{}
}

// Execer runs Publish's pg_notify with PostgreSQL's $n placeholders: the
// store's *sql.DB, whose pool is already there (not a *bun.DB, whose
// ExecContext reads ? placeholders).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// PostgresOptions tunes a PostgreSQL adapter; zero values take the defaults.
type PostgresOptions struct {
	// ProbeEvery defaults to 2 s.
	ProbeEvery time.Duration
	// ApplicationName names the listening connection in pg_stat_activity;
	// it defaults to "profilesvc-notices".
	ApplicationName string
}

// NewPostgres returns notices over channel of the database at dsn,
// published through exec. Nothing is heard before Start.
func NewPostgres(dsn, channel string, exec Execer, log *zap.Logger, o PostgresOptions) *Postgres {
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 2 * time.Second
	}
	if o.ApplicationName == "" {
		o.ApplicationName = "profilesvc-notices"
	}
	return &Postgres{dsn: dsn, channel: channel, exec: exec, log: log, hub: newHub(false), probeEvery: o.ProbeEvery, appName: o.ApplicationName}
}

// Publish notifies every instance listening to the channel.
func (p *Postgres) Publish(ctx context.Context, topic, payload string) error {
	if err := checkNotice(topic, payload); err != nil {
		return err
	}
	if _, err := p.exec.ExecContext(ctx, "SELECT pg_notify($1, $2)", p.channel, Wire(topic, payload)); err != nil {
		return fmt.Errorf("notices: notifying through postgres: %w", err)
	}
	return nil
}

// Subscribe calls h with every notice of topic until cancel is called.
func (p *Postgres) Subscribe(topic string, h func(ports.Notice)) (cancel func()) {
	return p.hub.subscribe(topic, h)
}

// Start listens in the background until Stop; it does not wait for the
// database.
func (p *Postgres) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.stop, p.done = cancel, make(chan struct{})
	go p.run(ctx)
}

// Stop closes the listening connection and waits for its goroutine.
func (p *Postgres) Stop() {
	if p.stop == nil {
		return
	}
	p.stop()
	<-p.done
}

func (p *Postgres) run(ctx context.Context) {
	defer close(p.done)
	var retry backoff
	for ctx.Err() == nil {
		err := p.listen(ctx, &retry)
		p.hub.setListening(false)
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("notices: postgres listener lost; caches fed by it are dropped", zap.Error(err))
		if !retry.wait(ctx) {
			return
		}
	}
}

// listen runs one listening connection until it fails.
func (p *Postgres) listen(ctx context.Context, retry *backoff) error {
	cfg, err := pgx.ParseConfig(p.dsn)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = p.appName
	connectCtx, cancel := context.WithTimeout(ctx, 5*p.probeEvery)
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), p.probeEvery)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{p.channel}.Sanitize()); err != nil {
		return err
	}
	retry.reset()
	p.log.Info("notices: listening", zap.String("channel", p.channel))
	p.hub.setListening(true)
	for {
		waitCtx, cancel := context.WithTimeout(ctx, p.probeEvery)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			topic, payload, err := unwire(n.Payload)
			if err != nil {
				p.log.Warn("notices: dropped a malformed notification", zap.Error(err))
				continue
			}
			p.hub.deliver(topic, payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case waitCtx.Err() != nil && !conn.IsClosed():
			pingCtx, cancel := context.WithTimeout(ctx, p.probeEvery)
			err := conn.Ping(pingCtx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
