// Command profilesvc runs the browser-profile service: `serve` (the default),
// `migrate` (apply database migrations and exit) and `version`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"text/tabwriter"

	"go.uber.org/dig"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/config"
)

// version and commitID are set at build time (make run and make build do):
// -ldflags "-X main.version=... -X main.commitID=...". Without commitID,
// the commit is the one Go records in a binary built in a checkout.
var (
	version  = "dev"
	commitID = ""
)

const usage = `usage: profilesvc [serve | migrate | version | help config]

  serve        run the HTTP service (default)
  migrate      apply pending database migrations and exit
  version      print the version and exit
  help config  list every variable of the environment with its default

Configuration comes from the environment; see README.md.
`

func main() {
	// An interrupt (Ctrl-C) ends ctx: serve then stops at once, saving its
	// browsers' data, and exits 0; migrate stops where it is. SIGTERM and
	// SIGUSR1 drain the instance first (see serve); migrate stops on them
	// as on an interrupt.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, drainSignals...)
	code := run(ctx, signals, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command but the process: its signals, arguments,
// environment and output come in, its exit code goes out.
func run(ctx context.Context, signals <-chan os.Signal, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "profilesvc %s (commit %s)\n", version, commit())
		return 0
	case "help", "--help", "-h":
		if len(args) > 1 && args[1] == "config" {
			// The variables as Load reads them: the same code lists
			// them, so the list cannot miss one.
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "VARIABLE\tDEFAULT")
			for _, v := range config.Variables() {
				d := v.Default
				if d == "" {
					d = "(unset)"
				}
				fmt.Fprintf(tw, "%s\t%s\n", v.Name, d)
			}
			if err := tw.Flush(); err != nil {
				return 1
			}
			return 0
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "migrate":
	default:
		fmt.Fprintf(stderr, "profilesvc: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "profilesvc: configuration: %v\n", err)
		return 2
	}
	if cmd == "migrate" {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-signals:
				cancel()
			case <-ctx.Done():
			}
		}()
		applied, err := wiring.Migrate(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "profilesvc: migrate: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", len(applied))
		for _, name := range applied {
			fmt.Fprintln(stdout, "  ", name)
		}
		return 0
	}
	return serve(ctx, signals, cfg, getenv, stderr)
}

// The service's live heap is small (about 10 MB), so Go's default
// (GOGC=100) collects after every 10 MB allocated: under load, a tenth of
// the CPU went to the collector. serve lets the heap grow to five times
// the live one before collecting, with a soft limit that brings
// collections back before it reaches gcMemoryLimit. It does so once
// started, so that what starting allocates is collected as usual and the
// idle process stays small. GOGC and GOMEMLIMIT, when set, are Go's as
// always.
const (
	gcPercent     = 400
	gcMemoryLimit = 256 << 20
)

func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}

// serve runs the service until ctx ends, SIGTERM comes or something in the
// app asks fx to shut down, then stops it, which lets in-flight requests
// complete and saves every browser's data.
//
// SIGTERM drains first: the instance starts no more browsers (the fleet
// places its launches elsewhere) and lets the ones it runs go on until
// they end, DRAIN_TIMEOUT passes, or an interrupt or another SIGTERM cuts
// it short. SIGUSR1 drains the same way and keeps the instance up, for a
// rolling deploy that stops it later.
func serve(ctx context.Context, signals <-chan os.Signal, cfg config.Config, getenv func(string) string, stderr io.Writer) int {
	var (
		log     *zap.Logger
		summary *wiring.Summary
		drain   wiring.Drain
	)
	app := wiring.App(cfg,
		fx.Replace(wiring.LogOutput{Writer: stderr}, wiring.Build{Version: version, Commit: commit()}),
		fx.Populate(&log, &summary, &drain),
	)
	if err := app.Err(); err != nil {
		fmt.Fprintf(stderr, "profilesvc: %s\n", startError(err))
		return 1
	}
	startCtx, cancelStart := context.WithTimeout(ctx, app.StartTimeout())
	defer cancelStart()
	if err := app.Start(startCtx); err != nil {
		fmt.Fprintf(stderr, "profilesvc: %s\n", startError(err))
		return 1
	}
	log.Info("profilesvc started", summary.Fields()...)
	tuneGC(getenv)
	// What starting allocated (migrations, the first connections) is
	// garbage now: give it back, so the idle process is as small as it gets.
	debug.FreeOSMemory()
	code := 0
	// kept is a drain started by SIGUSR1: cut short, and waited for,
	// before the app stops.
	keptCtx, cutKept := context.WithCancel(ctx)
	defer cutKept()
	var kept sync.WaitGroup
	keeping := false
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case sig := <-app.Wait():
			code = sig.ExitCode
			break wait
		case sig := <-signals:
			if sig == keepUp {
				if !keeping {
					keeping = true
					kept.Go(func() { drain(keptCtx) })
				}
				continue
			}
			drainCtx, cut := context.WithCancel(ctx)
			go func() {
				select {
				case <-signals:
					cut()
				case <-drainCtx.Done():
				}
			}()
			drain(drainCtx)
			cut()
			break wait
		}
	}
	cutKept()
	kept.Wait()
	// Stopping gets its own time: ctx has ended by now.
	stopCtx, cancelStop := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancelStop()
	if err := app.Stop(stopCtx); err != nil {
		fmt.Fprintf(stderr, "profilesvc: stop: %v\n", err)
		return 1
	}
	log.Info("profilesvc stopped", zap.Int("exit_code", code))
	return code
}

// startError is what stopped the app from being built or started, in one
// line, without the dependency graph fx and dig wrap it in: the error of
// the piece that failed, which names the variable it came from
// (DATABASE_URL: ...).
func startError(err error) string {
	err = dig.RootCause(err)
	for strings.HasPrefix(err.Error(), "OnStart hook added by") && errors.Unwrap(err) != nil {
		err = errors.Unwrap(err)
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// commit is the VCS revision the binary was built from: commitID, else
// as Go records it.
func commit() string {
	if commitID != "" {
		return commitID
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
