// Package wiring is the composition root: the only package that knows every
// adapter. It turns a config.Config into an fx application, one module per
// infrastructure piece and per bounded context, and is shared by cmd and the
// black-box tests (which pass extra fx options to replace pieces).
package wiring

import (
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/config"
)

// App builds the whole service for cfg. extra options come last, so tests and
// embedding teams can fx.Replace or fx.Decorate any piece.
func App(cfg config.Config, extra ...fx.Option) *fx.App {
	return fx.New(Options(cfg, extra...))
}

// Options is App's option set, for callers that build their own fx app
// (fxtest.New in tests).
func Options(cfg config.Config, extra ...fx.Option) fx.Option {
	return fx.Options(
		fx.Supply(cfg),
		fx.WithLogger(func(l *zap.Logger) fxevent.Logger { return &fxevent.ZapLogger{Logger: l.Named("fx")} }),
		fx.StopTimeout(cfg.ShutdownTimeout+5e9),
		Logging,
		Runtime,
		Storage,
		Blob,
		Idempotency,
		Cache,
		Notices,
		Security,
		Mail,
		Accounts,
		Profiles,
		Teams,
		Webhooks,
		Prober,
		Proxies,
		HTTP,
		fx.Options(extra...),
	)
}
