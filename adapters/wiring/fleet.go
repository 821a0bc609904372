package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/peers"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Fleet makes the instances sharing a database one browser fleet: each
// beats into the registry, takes launches placed by the others, ends the
// sessions of instances gone, and drains before it stops.
var Fleet = fx.Module("fleet",
	fx.Provide(
		newFleet,
		newDrain,
		fx.Annotate(peerRoutes, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(drainingChecker, fx.ResultTags(`group:"checkers"`)),
	),
	fx.Invoke(runFleet),
)

// peersKey is the key the instances sign what they ask of one another
// with, derived from SECRET_KEY, which every instance of a fleet shares.
type peersKey []byte

func newFleet(cfg config.Config, store storage.Store, clock ports.Clock, ids ports.IDs, b Build) (profiles.Fleet, peersKey, error) {
	key, err := peers.Key(cfg.SecretKey)
	if err != nil {
		return profiles.Fleet{}, nil, fmt.Errorf("SECRET_KEY: %w", err)
	}
	return profiles.Fleet{
		Instances: store.Instances(), Peers: peers.NewClient(key, clock),
		InstanceID: ids.New("ins"), Version: b.Version, Timeout: cfg.Fleet.Timeout,
	}, peersKey(key), nil
}

// peerRoutes mount the endpoints that take the launches and releases
// other instances hand to this one. They are public to the router: their
// signature authenticates them.
func peerRoutes(svc *profiles.Service, key peersKey, cfg config.Config, listen *ListenAddr, clock ports.Clock) Routes {
	h := peers.NewHandler(key, nodeURL(cfg, listen), clock, svc, func(r *http.Request, err error) {
		httpapi.RequestLogger(r.Context()).Error("a request of another instance failed", zap.Error(err))
	})
	route := func(path, name string, serve http.HandlerFunc) httpapi.Route {
		return httpapi.Route{Method: http.MethodPost, Path: path, Public: true, Name: name,
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				serve(w, r)
				return nil
			}}
	}
	return Routes{route(peers.LaunchPath, "fleet.launch", h.Launch), route(peers.ReleasePath, "fleet.release", h.Release)}
}

// drainingChecker fails /readyz while the instance drains, so that a
// balancer sends its requests to the others; the CDP clients of its
// browsers reach them through any instance.
func drainingChecker(svc *profiles.Service) Checker {
	return Checker{Name: "draining", Check: func(context.Context) error {
		if svc.Draining() {
			return fmt.Errorf("the instance is draining")
		}
		return nil
	}}
}

// Drain drains the instance (profiles.Service.Drain) for at most
// DRAIN_TIMEOUT, or until ctx ends: cmd runs it on SIGTERM before the app
// stops, and on SIGUSR1.
type Drain func(ctx context.Context)

func newDrain(svc *profiles.Service, cfg config.Config, log *slog.Logger) Drain {
	return func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, cfg.Fleet.DrainTimeout)
		defer cancel()
		log.InfoContext(ctx, "draining: no more browsers start here; the running ones go on until they end or DRAIN_TIMEOUT",
			"browsers", svc.BrowsersRunning(), "drain_timeout", cfg.Fleet.DrainTimeout.String())
		start := time.Now()
		if err := svc.Drain(ctx); err != nil {
			log.ErrorContext(ctx, "stop the browsers at the end of a drain", "error", err.Error())
		}
		log.InfoContext(ctx, "drained", "seconds", time.Since(start).Seconds())
	}
}

// runFleet beats every FLEET_HEARTBEAT, ending the sessions of instances
// gone, and at stop leaves the registry, so that the others place no more
// launches here and take nothing of this instance for gone. It starts once
// the server listens (its hook comes after the server's): the others may
// place launches here only then, and with HTTP_ADDR's port left to the
// system the instance knows its address only then.
func runFleet(lc fx.Lifecycle, svc *profiles.Service, cfg config.Config, log *slog.Logger, _ *httpapi.Server) {
	lc.Append(fx.Hook{OnStop: func(ctx context.Context) error {
		if err := svc.Leave(ctx); err != nil {
			log.ErrorContext(ctx, "leave the fleet's registry", "error", err.Error())
		}
		return nil
	}})
	runEvery(lc, cfg.Fleet.Heartbeat, func(ctx context.Context) {
		if err := svc.Beat(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "fleet heartbeat", "error", err.Error())
		}
		if n, err := svc.EndGoneInstances(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "end the sessions of instances gone", "error", err.Error(), "ended", n)
		} else if n > 0 {
			log.InfoContext(ctx, "ended the sessions of instances gone, as crashed", "ended", n)
		}
	})
}
