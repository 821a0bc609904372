//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseStatReadsUtimeAndStimeAfterACommandWithSpaces(t *testing.T) {
	// Fields 14 and 15 (utime 250, stime 50 ticks) after a name with ") ".
	line := "4242 (odd) name) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 100 1000 200 18446744073709551615"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Fatalf("cpu = %v, want %v", got, want)
	}
	if _, err := parseStat("4242 (x) S 1 2"); err == nil {
		t.Fatal("a short line parsed")
	}
	if _, err := parseStat("no parenthesis"); err == nil {
		t.Fatal("a line without a command parsed")
	}
}

func TestDrainIsArrivalsPerSecondAcrossTheWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w []time.Time
	for i := range 11 {
		w = append(w, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	// 10 intervals in 1 s.
	if got := drain(w); got != 10 {
		t.Fatalf("drain = %v, want 10", got)
	}
	if got := drain([]time.Time{t0, t0}); got != 0 {
		t.Fatalf("drain of a zero span = %v, want 0", got)
	}
}

func ran(id string, rate, p99 float64) *target {
	return &target{id: id, backend: "b", workload: "w", server: "s", unit: "req/s", fig: figure{rate: rate, p99: p99, ran: true}}
}

func goal(t *testing.T, rows []goalRow, name string) goalRow {
	t.Helper()
	for _, r := range rows {
		if r.goal == name {
			return r
		}
	}
	t.Fatalf("no goal %q in %v", name, rows)
	return goalRow{}
}

func TestGoalsAreRatiosOfTheSameRun(t *testing.T) {
	r := &report{targets: []*target{
		ran("pg/get-key", 800, 5), ran("limit/read", 1000, 4),
		ran("pg/create", 700, 90), ran("limit/tx", 1000, 80),
		ran("sqlite/get-key", 300, 1), ran("limit/bare", 1000, 1),
	}}
	rows := r.goals()
	if g := goal(t, rows, "GET by API key, PostgreSQL ÷ pgx read limit"); !strings.HasPrefix(g.measured, "0.80 ") || g.met != "yes" {
		t.Errorf("read ratio: %+v", g)
	}
	if g := goal(t, rows, "Create, PostgreSQL ÷ pgx transaction limit"); !strings.HasPrefix(g.measured, "0.70 ") || g.met != "**no**" {
		t.Errorf("create ratio: %+v", g)
	}
	if g := goal(t, rows, "Create p99, PostgreSQL vs pgx transaction limit"); g.measured != "90.00 vs 80.00 ms" || g.met != "**no**" {
		t.Errorf("create p99: %+v", g)
	}
	if g := goal(t, rows, "GET by API key, SQLite ÷ bare net/http"); !strings.HasPrefix(g.measured, "0.30 ") || g.met != "**no**" {
		t.Errorf("sqlite ratio: %+v", g)
	}
	if g := goal(t, rows, "GET by API key, profile cache ÷ uncached (PostgreSQL + Redis)"); g.measured != "not measured" || g.target != "≥ 1.50" {
		t.Errorf("a row that did not run was given a figure: %+v", g)
	}
	if g := goal(t, rows, "GET by JWT, SQLite ÷ bare net/http"); g.target != "—" || g.met != "—" {
		t.Errorf("a ratio without a goal was given one: %+v", g)
	}
	if g := goal(t, rows, "GET by API key, SQLite with no profile cache ÷ bare net/http"); g.measured != "not measured" || g.target != "—" {
		t.Errorf("the uncached SQLite row is for comparison: %+v", g)
	}
}

func TestMarkdownListsEveryFigureAndSkips(t *testing.T) {
	r := &report{when: time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC), commit: "abc123", dirty: true, restarts: 3,
		load:      loadOptions{conns: 64, warmup: time.Second, round: 3 * time.Second, rounds: 5},
		targets:   []*target{ran("pg/get-key", 1234.4, 9.5)},
		instances: []*instance{{backend: backend{key: "pg", name: "PostgreSQL + Redis"}, starts: []time.Duration{90 * time.Millisecond, 80 * time.Millisecond, 400 * time.Millisecond}, idleRSS: 30}},
		skipped:   []string{"Redis runs skipped: refused"},
	}
	md := r.markdown()
	for _, want := range []string{
		"commit `abc123` (with uncommitted changes)",
		"| b | w | s | 1234 req/s | 0.00 | 9.50 |",
		"| PostgreSQL + Redis | 90 ms |",
		"| Idle RSS, PostgreSQL + Redis | 30.0 MB | ≤ 40 MB | yes |",
		"- Redis runs skipped: refused",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestBackendNeedsWhatItsEnvironmentNames(t *testing.T) {
	for _, b := range backends {
		pg := strings.HasPrefix(b.env["DATABASE_URL"], "{postgres}")
		if b.needs("{postgres}") != pg {
			t.Errorf("%s: needs postgres = %v", b.key, !pg)
		}
	}
	if (backend{env: map[string]string{"DATABASE_URL": "sqlite://{data}/x.db"}}).needs("{redis}") {
		t.Error("an SQLite row needs Redis")
	}
}

// The goal on SQLite is on the service as it starts by default.
func TestTheSQLiteRowMeasuresTheDefault(t *testing.T) {
	for _, b := range backends {
		if v, set := b.env["PROFILE_CACHE"]; b.key == "sqlite" && set {
			t.Errorf("the sqlite row sets PROFILE_CACHE=%s", v)
		}
	}
}

func TestWebhookGoalsAreThoseOfTheBacklog(t *testing.T) {
	r := &report{hooks: hookOptions{burst: 20000, steadyRate: 100}, hookFigs: []*hookFigure{{
		backend: "PostgreSQL + Redis", createRate: 1600, alongsideRate: 1069,
		queued: 20000, arrived: 20000, rate: 2100, window: 5000, firstRate: 2000, lastRate: 1500,
		p99: 12, steadyArrived: 2000, recorded: 42000, expected: 42000,
	}}}
	rows := r.goals()
	if g := goal(t, rows, "Webhook deliveries/s draining a queued backlog, PostgreSQL + Redis"); g.measured != "2100" || g.met != "yes" {
		t.Errorf("backlog rate: %+v", g)
	}
	if g := goal(t, rows, "Webhook drain of the backlog, last ÷ first 5000"); g.measured != "0.75" || g.met != "**no**" {
		t.Errorf("backlog drain: %+v", g)
	}
	if g := goal(t, rows, "Webhook deliveries/s alongside the burst's creates (for comparison), PostgreSQL + Redis"); g.measured != "1069 at 1600 creates/s" || g.met != "—" {
		t.Errorf("alongside rate: %+v", g)
	}
	r.hookFigs[0].arrived = 19000
	if g := goal(t, r.goals(), "Webhook deliveries/s draining a queued backlog, PostgreSQL + Redis"); g.met != "**no**" || !strings.Contains(g.measured, "19000 of 20000") {
		t.Errorf("a backlog cut short met its goal: %+v", g)
	}
}

func durations(msEach ...float64) []time.Duration {
	out := make([]time.Duration, len(msEach))
	for i, v := range msEach {
		out[i] = time.Duration(v * float64(time.Millisecond))
	}
	return out
}

func TestBrowserGoalsCompareTheServiceWithTheBareBrowser(t *testing.T) {
	r := &report{browsers: &browserFigures{
		svcLaunch: durations(300, 310, 320), bareLaunch: durations(280, 300, 290),
		svcConnect: durations(100, 160, 120), bareConnect: durations(30, 30, 30),
		svcRoundTrip: durations(0.5, 0.5, 0.5), bareRoundTrip: durations(0.25, 0.25, 0.25),
	}}
	rows := r.goals()
	if g := goal(t, rows, "Browser launch until CDP answers p50, service (sandbox, relay) ÷ bare Chromium"); g.measured != "1.07 (310.00 vs 290.00 ms)" || g.target != "≤ 1.15" || g.met != "yes" {
		t.Errorf("launch ratio: %+v", g)
	}
	if g := goal(t, rows, "Connect + new page through the relay p50"); g.measured != "120.0 ms (bare Chromium 30.0 ms)" || g.met != "yes" {
		t.Errorf("connect: %+v", g)
	}
	if g := goal(t, rows, "CDP round trip p50, relay ÷ bare Chromium's DevTools WebSocket"); !strings.HasPrefix(g.measured, "2.00 ") || g.met != "**no**" {
		t.Errorf("round trip: %+v", g)
	}
}

func TestMarkdownSaysWhyTheBrowsersWereSkipped(t *testing.T) {
	r := &report{browsersSkipped: "Browser figures skipped: bubblewrap is not installed"}
	md := r.markdown()
	if !strings.Contains(md, "## Browsers\n\nBrowser figures skipped: bubblewrap is not installed\n") {
		t.Errorf("no skip line in the browser section:\n%s", md)
	}
	for _, g := range r.goals() {
		if strings.HasPrefix(g.goal, "Browser") {
			t.Errorf("a browser goal without figures: %+v", g)
		}
	}
}

func TestTheLaunchGoalComparesWithTheServiceBeforeTheSandbox(t *testing.T) {
	r := &report{browsers: &browserFigures{
		svcLaunch: durations(330, 340, 350), bareLaunch: durations(250, 250, 250),
		beforeLaunch: durations(300, 310, 320), beforeRelease: durations(100, 100, 100),
		svcConnect: durations(60, 60, 60), bareConnect: durations(30, 30, 30),
		svcRoundTrip: durations(0.3, 0.3, 0.3), bareRoundTrip: durations(0.25, 0.25, 0.25), fwdRoundTrip: durations(0.35, 0.35, 0.35),
	}, browserOpts: browserOptions{before: "abc1234"}}
	rows := r.goals()
	if g := goal(t, rows, "Browser launch until CDP answers p50, service ÷ the service before the sandbox"); g.measured != "1.10 (340.00 vs 310.00 ms)" || g.target != "≤ 1.15" || g.met != "yes" {
		t.Errorf("launch ratio: %+v", g)
	}
	if g := goal(t, rows, "Browser launch until CDP answers p50, service ÷ bare Chromium"); g.measured != "1.36 (340.00 vs 250.00 ms)" || g.target != "—" {
		t.Errorf("the bare browser's ratio, for comparison: %+v", g)
	}
	if g := goal(t, rows, "CDP round trip p50, plain Go TCP forwarder ÷ bare Chromium's DevTools WebSocket (the floor of a Go relay)"); g.measured != "1.40 (0.35 vs 0.25 ms)" || g.target != "—" {
		t.Errorf("the forwarder's ratio, for comparison: %+v", g)
	}
	if md := r.markdown(); !strings.Contains(md, "| launch until CDP answers, p50 | 340.00 ms | 310.00 ms | 1.10 |") || !strings.Contains(md, "abc1234") {
		t.Errorf("no before-and-after table:\n%s", md)
	}
}

func TestTheFirstPageGoalComparesWithTheServiceBeforeTheDevice(t *testing.T) {
	r := &report{browsers: &browserFigures{
		svcLaunch: durations(300, 300, 300), bareLaunch: durations(250, 250, 250),
		svcConnect: durations(60, 60, 60), bareConnect: durations(30, 30, 30),
		svcRoundTrip: durations(0.3, 0.3, 0.3), bareRoundTrip: durations(0.25, 0.25, 0.25),
		svcFirstPage: durations(420, 440, 460), beforeDeviceFirstPage: durations(380, 390, 400),
		svcMemory: treeMemory{pss: 300 << 20}, beforeDeviceMemory: treeMemory{pss: 250 << 20},
	}, browserOpts: browserOptions{beforeDevice: "def5678"}}
	if g := goal(t, r.goals(), "Launch to a first page p50, service ÷ the service before the device model"); g.measured != "1.13 (440.00 vs 390.00 ms)" || g.target != "≤ 1.10" || g.met != "**no**" {
		t.Errorf("first page ratio: %+v", g)
	}
	if md := r.markdown(); !strings.Contains(md, "| launch to a first page, p50 | 440.00 ms | 390.00 ms | 1.13 |") || !strings.Contains(md, "| memory per browser, PSS | 300.00 MB | 250.00 MB | 1.20 |") || !strings.Contains(md, "def5678") {
		t.Errorf("no before-and-after table of the device model:\n%s", md)
	}
}

func TestTheFleetSectionSetsThePlacedLaunchBesideTheLocalOne(t *testing.T) {
	r := &report{fleet: &fleetFigures{
		local: durations(300, 310, 320, 330), remote: durations(330, 345, 360, 400),
		perKind: 5, localPlaced: 0, remotePlaced: 5,
		one: &fleetThroughput{instances: 1, browsersMax: 12, window: 2 * time.Second, launches: durations(400, 410, 420, 430, 440, 450), releases: durations(100, 100), answered: 7, cpu: 97},
		three: &fleetThroughput{instances: 3, browsersMax: 4, window: 2 * time.Second, launches: durations(500, 510, 520, 530, 540), releases: durations(120, 120), answered: 6, placed: 2, cpu: 98,
			errors: 1, firstError: "status 503: the fleet is full"},
	}, fleetOpts: fleetOptions{launches: 4, clients: 6, duration: 2 * time.Second, browsers: 4}}
	md := r.markdown()
	for _, want := range []string{
		"## Fleet\n",
		"| launch answered, p50 | 310.0 ms | 345.0 ms | +35.0 ms |",
		"| launch answered, p95 | 330.0 ms | 400.0 ms | +70.0 ms |",
		"| launches the receiving instance placed elsewhere (its /metrics) | 0 of 5 | 5 of 5 | |",
		"| 1 × BROWSERS_MAX=12 | 3.00 | 420.0 ms | 450.0 ms | 100.0 ms | 0 of 7 | 97 % | 0 |",
		"| 3 × BROWSERS_MAX=4 | 2.50 | 520.0 ms | 540.0 ms | 120.0 ms | 2 of 6 | 98 % | 1 |",
		"Three instances ÷ one: 0.83× the launches a second",
		"one instance with BROWSERS_MAX=12",
		"3 × BROWSERS_MAX=4, first error: status 503: the fleet is full",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownSaysWhyTheFleetWasSkipped(t *testing.T) {
	r := &report{fleetSkipped: "Fleet figures skipped: the instances of a fleet share a PostgreSQL database, not reachable"}
	if md := r.markdown(); !strings.Contains(md, "## Fleet\n\nFleet figures skipped: the instances") {
		t.Errorf("no skip line in the fleet section:\n%s", md)
	}
}
