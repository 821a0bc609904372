package wiring

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/adapters/cdprelay"
	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/profilecache"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// ReaperInterval is how often each instance looks for sessions whose lease
// ran out. Tests replace it (fx.Decorate) to see the reaper act at once.
type ReaperInterval time.Duration

// defaultReaperInterval bounds how long an expired lease can outlive its
// expiresAt: a few seconds, for a query on an index.
const defaultReaperInterval = ReaperInterval(5 * time.Second)

// ProfileDeps are the ports of the profile use cases.
type ProfileDeps struct {
	fx.In
	Store   storage.Store
	Tx      ports.UnitOfWork
	Outbox  ports.Outbox
	Metrics *sessionMetrics
	Runtime ports.BrowserRuntime
	Blobs   ports.BlobStore
	Data    *browserdata.Blobs
	Proxies *proxies.Service
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Config  config.Config
	Listen  *ListenAddr
	Cache   ProfileCache
	Fleet   profiles.Fleet
}

// ProfileCache is the cache of PROFILE_CACHE (redis or local), or nil:
// the profiles module reads through it, the proxies module drops the
// lists of profiles that show a proxy it changed.
type ProfileCache struct{ profilestore.Cache }

// newProfileCache is the cache of PROFILE_CACHE (redis or local), else nil
// (config refuses redis without REDIS_URL and local without SQLite).
func newProfileCache(cfg config.Config, r redisClient, guard *redisguard.Guard, clock ports.Clock) ProfileCache {
	switch {
	case cfg.ProfileCache.Kind == config.ProfileCacheLocal:
		return ProfileCache{profilecache.NewLocal(cfg.ProfileCache.TTL, localProfileCacheSize, clock.Now)}
	case cfg.ProfileCache.Kind != config.ProfileCacheRedis || r.Client == nil:
		return ProfileCache{}
	}
	return ProfileCache{profilecache.New(r.Client, guard, cfg.RedisKeyPrefix+"profile:", cfg.ProfileCache.TTL)}
}

// localProfileCacheSize bounds PROFILE_CACHE=local: about 2 KB a profile.
const localProfileCacheSize = 20_000

// Profiles provides the profile use cases, the browser runtime, their
// routes and the session reaper.
var Profiles = fx.Module("profiles",
	fx.Provide(
		newBrowserRuntime,
		newProfileCache,
		func(d ProfileDeps) *profiles.Service {
			return profiles.New(profiles.Deps{
				Tx: d.Tx, Teams: d.Store.Teams(), Profiles: d.Store.Profiles(), Users: d.Store.Users(), Proxies: d.Proxies, Outbox: d.Outbox,
				Metrics: d.Metrics,
				Runtime: d.Runtime, Blobs: d.Blobs, Data: d.Data, BlobRefs: d.Store.BlobRefs(), Snapshots: d.Store.Snapshots(),
				Clock: d.Clock, IDs: d.IDs, Log: d.Log, Cache: d.Cache.Cache, EngineVersion: engineVersion(d.Runtime), Fleet: d.Fleet,
				Policy: profiles.Policy{
					SessionTTLDefault: d.Config.SessionTTLDefault, SessionTTLMax: d.Config.SessionTTLMax,
					MaxProfiles: d.Config.Quotas.Profiles, PublicURL: publicURL(d.Config, d.Listen), NodeURL: nodeURL(d.Config, d.Listen),
					BrowsersMax: browsersMax(d.Config, d.Runtime),
				},
			})
		},
		func() ReaperInterval { return defaultReaperInterval },
		func(cfg config.Config) CheckpointInterval { return CheckpointInterval(cfg.Browser.CookieCheckpoint) },
		fx.Annotate(func(svc *profiles.Service) Routes { return httpapi.NewProfileHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(func(svc *profiles.Service, cfg config.Config, listen *ListenAddr) Routes {
			return cdprelay.New(svc, cdprelay.Options{
				PublicURL: publicURL(cfg, listen), Origins: cfg.CORSOrigins, MaxConnections: cfg.Browser.RelayConnections,
			}).Routes()
		}, fx.ResultTags(`group:"routes"`)),
	),
	// recoverBrowsers first: its hook ends the sessions a killed process
	// left before the reaper could end them without their data, and before
	// the server serves.
	fx.Invoke(recoverBrowsers, startReaper, runBrowsers),
)

// publicURL is PUBLIC_URL, or the address the server listens on.
func publicURL(cfg config.Config, listen *ListenAddr) func() string {
	if cfg.Browser.PublicURL != "" {
		return func() string { return cfg.Browser.PublicURL }
	}
	return listen.BaseURL
}

// consoleURL is the web console's base URL: PUBLIC_URL/app.
func consoleURL(cfg config.Config, listen *ListenAddr) func() string {
	public := publicURL(cfg, listen)
	return func() string { return public() + "/app" }
}

// nodeURL is NODE_URL, or PUBLIC_URL. Without either, it is the address
// the server listens on, and before the server has started (when
// recoverBrowsers runs) the one it will listen on: HTTP_ADDR, unless that
// names a host (whose address is known only once listening) or leaves the
// port to the system, when it is "" and no session is known as this
// instance's.
func nodeURL(cfg config.Config, listen *ListenAddr) func() string {
	if cfg.Browser.NodeURL != "" {
		return func() string { return cfg.Browser.NodeURL }
	}
	public := publicURL(cfg, listen)
	if cfg.Browser.PublicURL != "" {
		return public
	}
	return func() string {
		if listen.Addr() != "" {
			return public()
		}
		host, port, err := net.SplitHostPort(cfg.HTTPAddr)
		if err != nil || port == "" || port == "0" || (host != "" && net.ParseIP(host) == nil) {
			return ""
		}
		var configured ListenAddr
		configured.set(cfg.HTTPAddr)
		return configured.BaseURL()
	}
}

// engine is a runtime that knows the version of the browser it runs
// (chromium.Runtime: "156.0.8078.108").
type engine interface{ Version() string }

// engineVersion is the version of the browser rt runs, which user agents
// name; "" for a runtime that runs none (leases only).
func engineVersion(rt ports.BrowserRuntime) string {
	if e, ok := rt.(engine); ok {
		return e.Version()
	}
	return ""
}

// browsersMax is BROWSERS_MAX for a runtime that runs browsers, else 0.
func browsersMax(cfg config.Config, rt ports.BrowserRuntime) int {
	if _, leaseOnly := rt.(browser.LeaseOnly); leaseOnly {
		return 0
	}
	return cfg.Browser.Max
}

// CheckpointInterval is how often the cookies of the browsers an instance
// runs are saved (COOKIE_CHECKPOINT_INTERVAL). Tests replace it
// (fx.Decorate).
type CheckpointInterval time.Duration

// runBrowsers ends the sessions of browsers that exit by themselves, saves
// the cookies of running ones every interval, and at shutdown closes every
// browser this instance runs, storing its data before its lease ends.
func runBrowsers(lc fx.Lifecycle, svc *profiles.Service, rt ports.BrowserRuntime, every CheckpointInterval, log *slog.Logger) {
	runEvery(lc, time.Duration(every), func(ctx context.Context) {
		if err := svc.CheckpointCookies(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "cookie checkpoint", "error", err.Error())
		}
	})
	exits := rt.Exits()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			if exits == nil {
				return nil
			}
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case exit := <-exits:
						if err := svc.BrowserExited(ctx, exit); err != nil {
							log.ErrorContext(ctx, "end the session of an exited browser", "session_id", exit.SessionID, "error", err.Error())
						}
					}
				}
			})
			return nil
		},
		OnStop: func(stopCtx context.Context) error {
			cancel()
			wg.Wait()
			if err := svc.StopBrowsers(stopCtx); err != nil {
				log.ErrorContext(stopCtx, "stop browsers at shutdown", "error", err.Error())
			}
			return nil
		},
	})
}

// recoverBrowsers ends, at start, the sessions a killed process of this
// instance left (profiles.Service.RecoverBrowsers), storing what their
// browsers wrote. It runs before the instance serves: a launch of one of
// those profiles finds it idle. A failure is logged and the instance
// starts all the same: the sessions that did not end keep their leases
// (and their directories, for the next start) until the reaper ends them.
func recoverBrowsers(lc fx.Lifecycle, svc *profiles.Service, log *slog.Logger) {
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		n, err := svc.RecoverBrowsers(ctx)
		if err != nil {
			log.ErrorContext(ctx, "end the sessions a killed process left", "error", err.Error(), "ended", n)
		} else if n > 0 {
			log.InfoContext(ctx, "ended the sessions a killed process left, as crashed", "ended", n)
		}
		return nil
	}})
}

// startReaper runs the reaper on every instance: at start, so that leases
// that ran out while the service was down end at once, and then every
// interval until the app stops.
func startReaper(lc fx.Lifecycle, svc *profiles.Service, every ReaperInterval, log *slog.Logger) {
	runEvery(lc, time.Duration(every), func(ctx context.Context) {
		if n, err := svc.ReapExpired(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "session reaper", "error", err.Error(), "ended", n)
		} else if n > 0 {
			log.InfoContext(ctx, "session reaper ended expired sessions", "ended", n)
		}
	})
}

// runEvery runs job at start and then every interval until the app stops.
func runEvery(lc fx.Lifecycle, every time.Duration, job func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Go(func() {
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					job(ctx)
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
				}
			})
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			wg.Wait()
			return nil
		},
	})
}
