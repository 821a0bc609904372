package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// lookup is a getenv over env alone, so that no test depends on or changes
// the process environment.
func lookup(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// secrets lets Load skip generating keys.
var secrets = map[string]string{
	"JWT_SECRET": "jwt-secret-0123456789abcdef0123456789",
	"SECRET_KEY": "secret-key-0123456789abcdef0123456789",
}

func withSecrets(env map[string]string) map[string]string {
	for k, v := range secrets {
		env[k] = v
	}
	return env
}

func TestRunAnswersWithoutConfiguration(t *testing.T) {
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"version"}, 0, "profilesvc dev (commit unknown)\n", ""},
		{[]string{"--version"}, 0, "profilesvc dev (commit unknown)\n", ""},
		{[]string{"help"}, 0, usage, ""},
		{[]string{"frobnicate"}, 2, "", "profilesvc: unknown command \"frobnicate\"\n\n" + usage},
	} {
		var stdout, stderr bytes.Buffer
		// An environment Load would refuse: these commands must not read it.
		env := map[string]string{"LOG_LEVEL": "loud"}
		code := run(context.Background(), nil, c.args, lookup(env), &stdout, &stderr)
		if code != c.code || stdout.String() != c.stdout || stderr.String() != c.stderr {
			t.Errorf("run(%q) = %d\nstdout %q\nstderr %q\nwant %d\nstdout %q\nstderr %q",
				c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
}

func TestRunRefusesABadConfiguration(t *testing.T) {
	for _, args := range [][]string{nil, {"serve"}, {"migrate"}} {
		var stdout, stderr bytes.Buffer
		env := withSecrets(map[string]string{"DATA_DIR": t.TempDir(), "DATABASE_URL": "mysql://app:hunter2@db/app"})
		code := run(context.Background(), nil, args, lookup(env), &stdout, &stderr)
		want := "profilesvc: configuration: DATABASE_URL: scheme \"mysql\" is not sqlite, postgres or memory\n"
		if code != 2 || stdout.Len() != 0 || stderr.String() != want {
			t.Errorf("run(%q) = %d\nstdout %q\nstderr %q\nwant 2 and stderr %q", args, code, stdout.String(), stderr.String(), want)
		}
	}
}

func TestRunMigrateCreatesTheSQLiteDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db", "profilesvc.db")
	env := withSecrets(map[string]string{"DATA_DIR": dir, "DATABASE_URL": "sqlite://" + path})
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, []string{"migrate"}, lookup(env), &stdout, &stderr); code != 0 {
		t.Fatalf("migrate = %d\nstderr %s", code, stderr.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if !strings.HasPrefix(first, "applied ") || first == "applied 0 migration(s)" {
		t.Fatalf("stdout %q, want the migrations applied to a new database", stdout.String())
	}
}

func TestRunMigrateReportsAnUnopenableDatabase(t *testing.T) {
	dir := t.TempDir()
	// A file where the database's directory should be.
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := withSecrets(map[string]string{"DATA_DIR": dir, "DATABASE_URL": "sqlite://" + filepath.Join(blocker, "profilesvc.db")})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, []string{"migrate"}, lookup(env), &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "profilesvc: migrate: DATABASE_URL: ") {
		t.Fatalf("migrate = %d, stderr %q; want 1 and an error naming DATABASE_URL", code, stderr.String())
	}
}

func TestRunServesUntilItsContextEnds(t *testing.T) {
	addr := freeAddr(t)
	env := withSecrets(map[string]string{
		"HTTP_ADDR":    addr,
		"DATA_DIR":     t.TempDir(),
		"DATABASE_URL": "memory://",
		"LOG_LEVEL":    "error",
	})
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	var code int
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, nil, nil, lookup(env), &stdout, &stderr)
	}()
	// A failed test still stops the service before the next test starts.
	t.Cleanup(func() {
		cancel()
		<-done
	})

	body := waitHealthy(t, addr, done, &code, &stderr)
	if want := `{"success":true,"data":{"status":"ok"}}`; body != want {
		t.Fatalf("/healthz = %s, want %s", body, want)
	}
	cancel()
	select {
	case <-done:
		if code != 0 {
			t.Fatalf("serve = %d after its context ended\nstderr %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return within 30 s of its context ending")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after serve returned", addr)
	}
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitHealthy polls addr's /healthz until it answers 200 and returns the
// body. It fails when run returns first (closing done, with its exit code in
// code) or no answer comes within 30 s.
func waitHealthy(t *testing.T, addr string, done <-chan struct{}, code *int, stderr *bytes.Buffer) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get("http://" + addr + "/healthz"); err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return strings.TrimSpace(string(b))
			}
		}
		select {
		case <-done:
			// run has returned, so nothing writes code or stderr any more.
			t.Fatalf("serve returned %d before answering\nstderr %s", *code, stderr.String())
		case <-deadline.C:
			t.Fatal("/healthz did not answer within 30 s")
		case <-tick.C:
		}
	}
}

// serving is a run of serve in the background.
type serving struct {
	done   chan struct{}
	code   int
	stderr bytes.Buffer
	cancel context.CancelFunc
}

// startServing runs serve with env until the test ends or stop is called,
// and waits until it answers on addr. Its start returns a moment after the
// listener opens: a stop in between fails the start, so stop it only after
// other work.
func startServing(t *testing.T, env map[string]string, addr string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		var stdout bytes.Buffer
		s.code = run(ctx, nil, []string{"serve"}, lookup(env), &stdout, &s.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	waitHealthy(t, addr, s.done, &s.code, &s.stderr)
	return s
}

// stop ends the run and waits for serve to return 0.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return within 30 s of its context ending")
	}
	if s.code != 0 {
		t.Fatalf("serve = %d after its context ended\nstderr %s", s.code, s.stderr.String())
	}
}

// One process uses a SQLite file: a second serve or a migrate on it is
// refused with one line naming DATABASE_URL while the first serves, and
// starts once the first has stopped. The lock is on an open file, not on a
// process, so a second run in this process meets it as another process
// would (tests/e2e runs the binary twice).
func TestRunRefusesASecondProcessOnTheSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profilesvc.db")
	env := func(addr string) map[string]string {
		return withSecrets(map[string]string{
			"HTTP_ADDR": addr, "DATA_DIR": dir, "DATABASE_URL": "sqlite://" + path,
			"BROWSER_RUNTIME": "none", "LOG_LEVEL": "error",
		})
	}
	firstAddr := freeAddr(t)
	first := startServing(t, env(firstAddr), firstAddr)

	held := "DATABASE_URL: another process holds sqlite://" + path + " (its lock " + path +
		".lock is taken): one process at a time uses a SQLite database; stop that one first, or use PostgreSQL to run several\n"
	for _, c := range []struct {
		cmd, want string
	}{
		{"serve", "profilesvc: " + held},
		{"migrate", "profilesvc: migrate: " + held},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), nil, []string{c.cmd}, lookup(env(freeAddr(t))), &stdout, &stderr)
		if code != 1 || stdout.Len() != 0 || stderr.String() != c.want {
			t.Fatalf("%s beside a running serve = %d\nstdout %q\nstderr %q\nwant 1 and stderr %q", c.cmd, code, stdout.String(), stderr.String(), c.want)
		}
	}
	if body := waitHealthy(t, firstAddr, first.done, &first.code, &first.stderr); body != `{"success":true,"data":{"status":"ok"}}` {
		t.Fatalf("the first serve answers /healthz with %s after the refusals", body)
	}

	first.stop(t)
	nextAddr := freeAddr(t)
	startServing(t, env(nextAddr), nextAddr)
}

// Without GOGC and GOMEMLIMIT, serve collects less often than Go's
// default, under a soft memory limit; either variable, when set, wins.
func TestTuneGCKeepsTheOperatorsSettings(t *testing.T) {
	before, beforeLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(before)
		debug.SetMemoryLimit(beforeLimit)
	})
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Fatalf("GC percent %d without GOGC, want 400", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != 256<<20 {
		t.Fatalf("memory limit %d without GOMEMLIMIT, want 256 MiB", got)
	}
	tuneGC(func(k string) string { return map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent changed to %d with GOGC set", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit changed to %d with GOMEMLIMIT set", got)
	}
}

// logLine is one line of the JSON log, with the fields the tests read.
type logLine map[string]any

func logLines(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for _, raw := range strings.Split(strings.TrimSpace(out), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %q", raw)
		}
		lines = append(lines, l)
	}
	return lines
}

// A normal start logs at most five lines at info, the last of them the one
// that says what runs where, and one line when it stops; fx's own events
// are below info, and no line carries a secret.
func TestServeLogsItsStartInOneLine(t *testing.T) {
	addr := freeAddr(t)
	env := withSecrets(map[string]string{
		"HTTP_ADDR":       addr,
		"DATA_DIR":        t.TempDir(),
		"LOG_LEVEL":       "info",
		"BROWSER_RUNTIME": "none",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	var stderr testenv.Output
	code := -1
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, nil, nil, lookup(env), &stdout, &stderr)
	}()
	poll.Check(t, 30*time.Second, "the start line", func() error {
		select {
		case <-done:
			t.Fatalf("serve = %d before it started\n%s", code, stderr.String())
		default:
		}
		if out := stderr.String(); !strings.Contains(out, "profilesvc started") {
			return errors.New(out)
		}
		return nil
	})
	cancel()
	<-done
	if code != 0 {
		t.Fatalf("serve = %d\n%s", code, stderr.String())
	}
	out := stderr.String()
	for _, secret := range secrets {
		if strings.Contains(out, secret) {
			t.Fatalf("the log holds a secret:\n%s", out)
		}
	}
	lines := logLines(t, out)
	var startInfo, warn []logLine
	started := -1
	for i, l := range lines {
		if l["logger"] == "fx" {
			t.Errorf("fx's event at %s: %v", l["level"], l["msg"])
		}
		if started >= 0 {
			continue
		}
		switch l["level"] {
		case "info":
			startInfo = append(startInfo, l)
		case "warn":
			warn = append(warn, l)
		}
		if l["msg"] == "profilesvc started" {
			started = i
		}
	}
	if started < 0 || len(startInfo) > 5 {
		t.Fatalf("%d lines at info up to the start line (at %d), want at most 5 ending with it:\n%s", len(startInfo), started, out)
	}
	want := logLine{"version": "dev", "address": addr, "store": "sqlite",
		"cache": "local", "browser_runtime": "none (leases only)", "mail_transport": "log"}
	for k, v := range want {
		if lines[started][k] != v {
			t.Errorf("start line %s = %v, want %v", k, lines[started][k], v)
		}
	}
	if c, _ := lines[started]["commit"].(string); c == "" {
		t.Errorf("start line without a commit: %v", lines[started])
	}
	if last := lines[len(lines)-1]; last["msg"] != "profilesvc stopped" || last["level"] != "info" {
		t.Errorf("last line %v, want the stop's", last)
	}
	if len(warn) != 1 || !strings.Contains(fmt.Sprint(warn[0]["msg"]), "MAIL_TRANSPORT=log") {
		t.Errorf("warnings %v, want the one that says mail goes to the log", warn)
	}
}

// A configuration that cannot start is one line naming the variable and
// the cause, and a non-zero exit.
func TestServeReportsWhatStopsItsStartInOneLine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	closed := freeAddr(t)
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"database down": {map[string]string{"DATABASE_URL": "postgres://svc:db-password-42@" + closed + "/svc"}, "profilesvc: DATABASE_URL: connect to postgres database: "},
		"address taken": {map[string]string{"HTTP_ADDR": busy.Addr().String()}, "profilesvc: HTTP_ADDR: "},
		"no chromium":   {map[string]string{"BROWSER_RUNTIME": "chromium", "CHROMIUM_PATH": filepath.Join(t.TempDir(), "none")}, "profilesvc: CHROMIUM_PATH: "},
	} {
		env := withSecrets(map[string]string{"HTTP_ADDR": freeAddr(t), "DATA_DIR": t.TempDir(), "LOG_LEVEL": "info"})
		for k, v := range c.env {
			env[k] = v
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), nil, nil, lookup(env), &stdout, &stderr)
		var report []string
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if !strings.HasPrefix(line, "{") {
				report = append(report, line)
			}
		}
		if code == 0 || len(report) != 1 || !strings.HasPrefix(report[0], c.want) {
			t.Errorf("%s: exit %d, report %q, want one line starting %q\n%s", name, code, report, c.want, stderr.String())
		}
		if strings.Contains(stderr.String(), "db-password-42") || strings.Contains(stderr.String(), "could not build") {
			t.Errorf("%s: the report holds the password or fx's graph: %s", name, stderr.String())
		}
	}
}

// help config lists every variable with its default, whatever the
// environment holds.
func TestHelpConfigListsTheVariables(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, []string{"help", "config"}, lookup(map[string]string{"LOG_LEVEL": "loud", "HTTP_ADDR": ":9"}), &stdout, &stderr)
	out := stdout.String()
	if code != 0 || stderr.Len() > 0 || !strings.HasPrefix(out, "VARIABLE") {
		t.Fatalf("help config: %d\n%s%s", code, out, stderr.String())
	}
	for _, line := range []string{"HTTP_ADDR +:8080\n", "LOG_LEVEL +info\n", "REDIS_URL +\\(unset\\)\n", "SESSION_TTL_MAX +24h0m0s\n", "JWT_SECRET +generated once"} {
		if !regexp.MustCompile("(?m)^" + line).MatchString(out) {
			t.Errorf("help config lacks a line %q:\n%s", line, out)
		}
	}
}
