// Command profilesvc runs the browser-profile service: `serve` (the default),
// `migrate` (apply database migrations and exit) and `version`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: profilesvc [serve | migrate | version]

  serve     run the HTTP service (default)
  migrate   apply pending database migrations and exit
  version   print the version and exit

Configuration comes from the environment; see README.md.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "profilesvc", version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "migrate":
	default:
		fmt.Fprintf(stderr, "profilesvc: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	cfg, err := config.FromEnvironment()
	if err != nil {
		fmt.Fprintf(stderr, "profilesvc: configuration: %v\n", err)
		return 2
	}
	if cmd == "migrate" {
		applied, err := wiring.Migrate(context.Background(), cfg)
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
	app := wiring.App(cfg)
	if err := app.Err(); err != nil {
		fmt.Fprintf(stderr, "profilesvc: %v\n", err)
		return 1
	}
	// Run returns after SIGTERM or SIGINT once every stop hook has finished,
	// which lets in-flight requests complete; it exits 1 itself on failure.
	app.Run()
	return 0
}
