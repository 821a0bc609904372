// Package generators_test checks that mainstream code generators make
// working clients from the OpenAPI document as the service serves it: each
// generates a client from GET /openapi.yaml, the client compiles, and it
// drives register, an API key, and a profile's create, launch and release.
package generators_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/profilesvc/profilesvc/adapters/browser"
	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// flowTimeout bounds one generator's run and its flow.
const flowTimeout = 3 * time.Minute

// startService starts the service in-process on a loopback port, on the
// embedded SQLite store in a temporary directory, and returns its base URL.
// Its logs are shown when the test fails.
func startService(t *testing.T) string {
	t.Helper()
	env := map[string]string{
		"HTTP_ADDR":       "127.0.0.1:0",
		"DATA_DIR":        t.TempDir(),
		"JWT_SECRET":      "test-jwt-secret-0123456789abcdef0123456789abcdef",
		"SECRET_KEY":      "test-secret-key-0123456789abcdef0123456789abcdef",
		"LOG_LEVEL":       "info",
		"BROWSER_RUNTIME": "none",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logs := &testenv.Output{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	var srv *httpapi.Server
	app := fxtest.New(t, wiring.Options(cfg,
		fx.Decorate(func() wiring.LogOutput { return wiring.LogOutput{Writer: logs} }),
		fx.Decorate(func(ports.BrowserRuntime) ports.BrowserRuntime { return relayedRuntime{} }),
		fx.Populate(&srv),
	))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return "http://" + srv.Addr()
}

// relayedRuntime runs no browser, as BROWSER_RUNTIME=none, but reports each
// session's browser as reached through the service's CDP relay, as the
// Chromium runtime does, so that a launch answers with a cdpUrl.
type relayedRuntime struct{ browser.LeaseOnly }

func (relayedRuntime) Start(context.Context, ports.LaunchSpec) (ports.RunningBrowser, error) {
	return ports.RunningBrowser{CDP: true}, nil
}
