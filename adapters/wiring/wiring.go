// Package wiring is the composition root: the only package that knows every
// adapter. It turns a config.Config into an fx application, one module per
// infrastructure piece and per bounded context, and is shared by cmd and the
// black-box tests (which pass extra fx options to replace pieces).
package wiring

import (
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
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
		fx.Supply(cfg, Build{Version: "dev", Commit: "unknown"}),
		fx.WithLogger(fxLogger),
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
		Fleet,
		BrowserData,
		Snapshots,
		Teams,
		Webhooks,
		Prober,
		Proxies,
		Web,
		HTTP,
		Metrics,
		fx.Provide(newSummary),
		fx.Options(extra...),
	)
}

// Build is what the binary knows of itself: its version and the commit it
// was built from. The command supplies it (fx.Replace).
type Build struct{ Version, Commit string }

// Summary says what the started service runs with, for the line the
// command logs once it has started: the build, the address, and the
// store, cache, browser runtime and mail transport.
type Summary struct {
	cfg      config.Config
	build    Build
	listen   *ListenAddr
	browsers string
}

func newSummary(cfg config.Config, b Build, listen *ListenAddr, rt ports.BrowserRuntime) *Summary {
	browsers := "chromium"
	if _, leases := rt.(browser.LeaseOnly); leases {
		browsers = "none (leases only)"
	}
	return &Summary{cfg: cfg, build: b, listen: listen, browsers: browsers}
}

// Fields are the summary as log fields; the address is known once the
// app has started.
func (s *Summary) Fields() []zap.Field {
	return []zap.Field{
		zap.String("version", s.build.Version), zap.String("commit", s.build.Commit),
		zap.String("address", s.listen.Addr()),
		zap.String("store", string(s.cfg.Database.Kind)),
		zap.String("cache", s.cfg.ProfileCache.Kind),
		zap.String("browser_runtime", s.browsers),
		zap.String("mail_transport", s.cfg.MailTransport),
	}
}

// fxLogger logs fx's own events, its errors included, at debug: the
// command reports an error that stops the start in one line of its own.
func fxLogger(l *zap.Logger) fxevent.Logger {
	z := &fxevent.ZapLogger{Logger: l.Named("fx")}
	z.UseLogLevel(zapcore.DebugLevel)
	z.UseErrorLevel(zapcore.DebugLevel)
	return z
}
