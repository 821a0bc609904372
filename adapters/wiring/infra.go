package wiring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/filelock"
	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/ids"
	"github.com/profilesvc/profilesvc/adapters/mail"
	"github.com/profilesvc/profilesvc/adapters/notices"
	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Logging provides the zap logger and the *slog.Logger that the application
// layer uses, backed by the same zap core, writing to LogOutput.
var Logging = fx.Module("logging",
	fx.Provide(func() LogOutput { return LogOutput{Writer: os.Stderr} }),
	fx.Provide(NewLogger),
	fx.Provide(func(l *zap.Logger) *slog.Logger { return slog.New(requestIDs{zapslog.NewHandler(l.Core())}) }),
)

// requestIDs names, in each line the application logs, the id of the
// request being served, if any, as the access log does.
type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	if id := httpapi.RequestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler { return requestIDs{h.Handler.WithGroup(name)} }

// LogOutput is where the log goes: standard error, unless the caller
// replaces it (fx.Replace), as the command does with its own.
type LogOutput struct{ io.Writer }

// NewLogger builds the zap logger of LOG_LEVEL and LOG_FORMAT on out: JSON
// lines (console: lines for a terminal), sampled as zap's production
// logger is.
func NewLogger(cfg config.Config, out LogOutput) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	zc := zap.NewProductionConfig()
	enc := zapcore.NewJSONEncoder(zc.EncoderConfig)
	if cfg.LogFormat == "console" {
		zc = zap.NewDevelopmentConfig()
		enc = zapcore.NewConsoleEncoder(zc.EncoderConfig)
	}
	sink := zapcore.Lock(zapcore.AddSync(out))
	core := zapcore.NewCore(enc, sink, level)
	if s := zc.Sampling; s != nil {
		core = zapcore.NewSamplerWithOptions(core, time.Second, s.Initial, s.Thereafter)
	}
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(sink)), nil
}

// Runtime provides time and identifiers.
var Runtime = fx.Module("runtime",
	fx.Provide(
		fx.Annotate(func() clock.System { return clock.System{} }, fx.As(new(ports.Clock))),
		fx.Annotate(ids.NewULID, fx.As(new(ports.IDs))),
	),
)

// Storage provides the store of DATABASE_URL: memory, SQLite or PostgreSQL.
// SQL stores are migrated when the app starts, before anything serves.
var Storage = fx.Module("storage",
	fx.Provide(
		NewStore,
	),
	fx.Provide(fx.Annotate(func(s storage.Store) Checker {
		return Checker{Name: "store", Check: s.Ping}
	}, fx.ResultTags(`group:"checkers"`))),
)

// NewStore opens the store of cfg.Database.
func NewStore(lc fx.Lifecycle, cfg config.Config, log *zap.Logger) (storage.Store, error) {
	if cfg.Database.Kind == config.DatabaseMemory {
		return memory.New(), nil
	}
	s, err := openSQLStore(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	var lock *filelock.Lock
	// closeAll runs at stop, or when the start fails, after which fx would
	// not call OnStop.
	closeAll := func() error {
		err := s.Close()
		if lock != nil {
			err = errors.Join(err, lock.Release())
		}
		return err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			held, err := lockSQLite(cfg.Database)
			if err != nil {
				_ = closeAll()
				return err
			}
			lock = held
			applied, err := s.Migrate(ctx)
			if err != nil {
				_ = closeAll()
				return fmt.Errorf("migrating the database: %w", err)
			}
			if len(applied) > 0 {
				log.Info("migrations applied", zap.Strings("migrations", applied))
			}
			return nil
		},
		OnStop: func(context.Context) error { return closeAll() },
	})
	return s, nil
}

// lockSQLite takes the lock that makes one process the only user of a
// SQLite file (PROFILE_CACHE=local relies on it: no other process writes
// behind its back), or returns nil for another database. The lock is
// <file>.lock, beside it: SQLite's own locks on the file are POSIX locks,
// which any close of the file in this process would drop.
func lockSQLite(db config.Database) (*filelock.Lock, error) {
	if db.Kind != config.DatabaseSQLite || db.Path == ":memory:" {
		return nil, nil
	}
	lock, err := filelock.Acquire(db.Path + ".lock")
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("DATABASE_URL: another process holds %s (its lock %s.lock is taken): one process at a time uses a SQLite database; stop that one first, or use PostgreSQL to run several", db, db.Path)
	case err != nil:
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return lock, nil
}

// openSQLStore opens the SQLite or PostgreSQL database of cfg without
// migrating it.
func openSQLStore(ctx context.Context, cfg config.Config) (*bunstore.Store, error) {
	var o bunstore.Options
	switch db := cfg.Database; db.Kind {
	case config.DatabaseSQLite:
		o = bunstore.Options{Dialect: bunstore.DialectSQLite, Path: db.Path}
	case config.DatabasePostgres:
		o = bunstore.Options{Dialect: bunstore.DialectPostgres, DSN: db.URL, QueryTimeout: cfg.DatabaseQueryTimeout}
	default:
		return nil, fmt.Errorf("DATABASE_URL: %s is not an SQL database", cfg.Database)
	}
	s, err := bunstore.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return s, nil
}

// Cache provides Redis (REDIS_URL) and the rate limiter: in-process without
// Redis, in Redis with it, so that several instances share one budget.
//
// Everything that uses Redis goes through one redisguard.Guard: when Redis
// does not answer, users do without it (limits are counted in process) and
// /readyz calls the cache "degraded" but stays 200.
var Cache = fx.Module("cache",
	fx.Provide(newRedis, newRedisGuard, newRateLimiter),
	fx.Provide(fx.Annotate(redisChecker, fx.ResultTags(`group:"checkers"`))),
)

// redisChecker is /readyz's "cache": whether Redis answers (always, without
// REDIS_URL). While Redis does not, it is also how the guard finds out that
// Redis is back when nothing else calls it.
func redisChecker(r redisClient, g *redisguard.Guard) Checker {
	check := func(context.Context) error { return nil }
	if r.Client != nil {
		check = func(ctx context.Context) error {
			return g.Do(ctx, "cache", func(ctx context.Context) error { return r.Ping(ctx).Err() })
		}
	}
	return Checker{Name: "cache", Check: check, Degrades: true}
}

// redisClient is nil when REDIS_URL is unset.
type redisClient struct{ *redis.Client }

func newRedis(lc fx.Lifecycle, cfg config.Config) (redisClient, error) {
	if cfg.RedisURL == "" {
		return redisClient{}, nil
	}
	opts, err := redisOptions(cfg)
	if err != nil {
		return redisClient{}, err
	}
	c := redis.NewClient(opts)
	lc.Append(fx.Hook{OnStop: func(context.Context) error { return c.Close() }})
	return redisClient{c}, nil
}

// redisOptions reads REDIS_URL and bounds every wait on Redis by
// REDIS_TIMEOUT, where the URL's own parameters (dial_timeout, read_timeout,
// write_timeout, pool_timeout, max_retries) do not say otherwise. go-redis'
// defaults (5 s to dial, 3 s to read, retries of both) let a Redis that
// accepts and never answers hold a request for over 10 s.
func redisOptions(cfg config.Config) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	for _, d := range []*time.Duration{&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout} {
		if *d == 0 {
			*d = cfg.RedisTimeout
		}
	}
	// A retry, of a command or of a dial (go-redis dials 5 times by
	// default), multiplies the wait on a Redis that does not answer; the
	// guard makes the next calls do without it instead.
	if u, err := url.Parse(cfg.RedisURL); err == nil && !u.Query().Has("max_retries") {
		opts.MaxRetries = -1
	}
	opts.DialerRetries = 1
	return opts, nil
}

// newRedisGuard is nil when REDIS_URL is unset. Its retry interval is on
// the system clock, not the service's: an outage lasts real seconds
// whatever clock the domain runs on (tests fake that one).
func newRedisGuard(r redisClient, cfg config.Config, log *zap.Logger, reg *prometheus.Registry) *redisguard.Guard {
	if r.Client == nil {
		return nil
	}
	return redisguard.New(clock.System{}, cfg.RedisRetryInterval, log.Named("redis"), reg)
}

func newRateLimiter(r redisClient, g *redisguard.Guard, c ports.Clock, cfg config.Config) ports.RateLimiter {
	if r.Client == nil {
		return ratelimit.NewLocal(c)
	}
	return ratelimit.NewGuarded(ratelimit.NewRedis(r.Client, cfg.RedisKeyPrefix+"rl:"), ratelimit.NewLocal(c), g)
}

// noticesChannel is the Redis channel (under REDIS_KEY_PREFIX) or the
// PostgreSQL channel that every instance of one deployment listens to.
const noticesChannel = "profilesvc_notices"

// Notices provides how instances tell each other what changed: Redis
// pub/sub with REDIS_URL, else PostgreSQL LISTEN/NOTIFY when DATABASE_URL
// is PostgreSQL (the instances share nothing else), else in process (one
// instance is the whole audience).
var Notices = fx.Module("notices", fx.Provide(newNotices))

func newNotices(lc fx.Lifecycle, cfg config.Config, r redisClient, s storage.Store, log *zap.Logger) (ports.Notices, error) {
	log = log.Named("notices")
	switch {
	case r.Client != nil:
		n := notices.NewRedis(r.Client, cfg.RedisKeyPrefix+noticesChannel, log, notices.RedisOptions{})
		lc.Append(fx.StartStopHook(n.Start, n.Stop))
		return n, nil
	case cfg.Database.Kind == config.DatabasePostgres:
		db, ok := s.(*bunstore.Store)
		if !ok {
			return nil, fmt.Errorf("notices: the PostgreSQL store is a %T", s)
		}
		n := notices.NewPostgres(cfg.Database.URL, noticesChannel, db.DB().DB, log, notices.PostgresOptions{})
		lc.Append(fx.StartStopHook(n.Start, n.Stop))
		return n, nil
	default:
		return notices.NewLocal(), nil
	}
}

// Mail provides the mailer of MAIL_TRANSPORT.
var Mail = fx.Module("mail", fx.Provide(func(cfg config.Config, log *zap.Logger) ports.Mailer {
	if cfg.MailTransport == "smtp" {
		s := cfg.SMTP
		return mail.NewSMTP(mail.SMTPServer{
			Host: s.Host, Port: s.Port, Username: s.Username, Password: s.Password,
			ImplicitTLS: s.ImplicitTLS, From: s.From,
		})
	}
	log.Warn("MAIL_TRANSPORT=log: the links and tokens of sign-up, invitation and password reset mails are written to this log, not sent; set MAIL_TRANSPORT=smtp to send them")
	return mail.NewLog(log)
}))
