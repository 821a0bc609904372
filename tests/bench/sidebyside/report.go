//go:build linux

package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// report is everything the run found, rendered as markdown.
type report struct {
	when      time.Time
	commit    string
	dirty     bool
	machine   [][2]string
	load      loadOptions
	hooks     hookOptions
	restarts  int
	targets   []*target
	hookFigs  []*hookFigure
	instances []*instance
	skipped   []string
	took      time.Duration

	mixed           *mixedFigures
	browsers        *browserFigures
	browserOpts     browserOptions
	browsersSkipped string
	live            *liveFigures
	liveSkipped     string
	fleet           *fleetFigures
	fleetOpts       fleetOptions
	fleetSkipped    string
}

func (r *report) find(id string) *target {
	for _, t := range r.targets {
		if t.id == id && t.fig.ran {
			return t
		}
	}
	return nil
}

type goalRow struct{ goal, measured, target, met string }

func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// goals are the ratios and bounds issues #14 and #28 name, from this run.
func (r *report) goals() []goalRow {
	var rows []goalRow
	ratio := func(goal, a, b string, atLeast float64) {
		// A ratio without a goal of its own (atLeast 0) is shown for
		// comparison only.
		target := "—"
		if atLeast > 0 {
			target = fmt.Sprintf("≥ %.2f", atLeast)
		}
		ta, tb := r.find(a), r.find(b)
		if ta == nil || tb == nil || tb.fig.rate == 0 {
			rows = append(rows, goalRow{goal, "not measured", target, "—"})
			return
		}
		x := ta.fig.rate / tb.fig.rate
		met := "—"
		if atLeast > 0 {
			met = verdict(x >= atLeast)
		}
		rows = append(rows, goalRow{goal, fmt.Sprintf("%.2f (%.0f vs %.0f req/s)", x, ta.fig.rate, tb.fig.rate), target, met})
	}
	ratio("GET by API key, PostgreSQL ÷ pgx read limit", "pg/get-key", "limit/read", 0.80)
	ratio("GET by JWT, PostgreSQL ÷ pgx read limit", "pg/get-jwt", "limit/read", 0)
	ratio("GET by API key, profile cache ÷ uncached (PostgreSQL + Redis)", "pgcache/get-key", "pg/get-key", 1.5)
	ratio("GET by API key, SQLite ÷ bare net/http", "sqlite/get-key", "limit/bare", 0.35)
	ratio("GET by JWT, SQLite ÷ bare net/http", "sqlite/get-jwt", "limit/bare", 0)
	ratio("GET by API key, SQLite with no profile cache ÷ bare net/http", "sqlitenocache/get-key", "limit/bare", 0)
	ratio("Create, PostgreSQL ÷ pgx transaction limit", "pg/create", "limit/tx", 0.80)
	if a, b := r.find("pg/create"), r.find("limit/tx"); a != nil && b != nil {
		rows = append(rows, goalRow{"Create p99, PostgreSQL vs pgx transaction limit", fmt.Sprintf("%.2f vs %.2f ms", a.fig.p99, b.fig.p99), "no worse", verdict(a.fig.p99 <= b.fig.p99)})
	}
	for _, in := range r.instances {
		ratio("List of 50 ÷ GET by API key, "+in.name, in.key+"/list50", in.key+"/get-key", 0.5)
	}
	ratio("List of 50 ÷ GET, the pgx limit servers (the most this machine allows)", "limit/list50", "limit/read", 0)
	ratio("List of 50, PostgreSQL ÷ pgx page-of-50 limit", "pg/list50", "limit/list50", 0)
	for _, h := range r.hookFigs {
		if !strings.HasPrefix(h.backend, "PostgreSQL") {
			continue
		}
		partial := ""
		if h.arrived < r.hooks.burst {
			partial = fmt.Sprintf(" (backlog cut short: %d of %d delivered)", h.arrived, r.hooks.burst)
		}
		drained := safeDiv(h.lastRate, h.firstRate)
		rows = append(rows,
			goalRow{"Webhook deliveries/s draining a queued backlog, " + h.backend, fmt.Sprintf("%.0f%s", h.rate, partial), "≥ 2000", verdict(h.rate >= 2000 && partial == "")},
			goalRow{fmt.Sprintf("Webhook drain of the backlog, last ÷ first %d", h.window), fmt.Sprintf("%.2f%s", drained, partial), "≥ 0.80", verdict(drained >= 0.8 && partial == "")},
			goalRow{"Webhook deliveries/s alongside the burst's creates (for comparison), " + h.backend, fmt.Sprintf("%.0f at %.0f creates/s", h.alongsideRate, h.createRate), "—", "—"},
			goalRow{fmt.Sprintf("Webhook event → first attempt p99 at %d/s", r.hooks.steadyRate), fmt.Sprintf("%.1f ms", h.p99), "≤ 50 ms", verdict(h.p99 <= 50 && h.steadyArrived > 0)},
			goalRow{"Webhook attempts recorded for the deliveries that arrived", fmt.Sprintf("%d of %d", h.recorded, h.expected), "all", verdict(h.recorded == h.expected && h.expected > 0)},
		)
	}
	for _, in := range r.instances {
		rows = append(rows,
			goalRow{"Idle RSS, " + in.name, fmt.Sprintf("%.1f MB", in.idleRSS), "≤ 40 MB", verdict(in.idleRSS <= 40)},
			goalRow{"Start to /healthz, " + in.name, fmt.Sprintf("%.0f ms", ms(medianDuration(in.starts))), "≤ 300 ms", verdict(medianDuration(in.starts) <= 300*time.Millisecond)},
		)
	}
	return append(rows, r.browserGoals()...)
}

func (r *report) browserGoals() []goalRow {
	f := r.browsers
	if f == nil {
		return nil
	}
	ratio := func(goal string, a, b []time.Duration, q, atMost float64) goalRow {
		pa, pb := pct(a, q), pct(b, q)
		x := safeDiv(pa, pb)
		g := goalRow{goal, fmt.Sprintf("%.2f (%.2f vs %.2f ms)", x, pa, pb), "—", "—"}
		if atMost > 0 {
			g.target, g.met = fmt.Sprintf("≤ %.2f", atMost), verdict(x <= atMost)
		}
		return g
	}
	connect := pct(f.svcConnect, 50)
	// The goal is the launch before and after isolation; without the
	// service before the sandbox, the bare browser stands in for it.
	launch := []goalRow{
		ratio("Browser launch until CDP answers p50, service (sandbox, relay) ÷ bare Chromium", f.svcLaunch, f.bareLaunch, 50, launchRatioGoal),
		ratio("Browser launch until CDP answers p95, service ÷ bare Chromium", f.svcLaunch, f.bareLaunch, 95, 0),
	}
	if len(f.beforeLaunch) > 0 {
		launch = []goalRow{
			ratio("Browser launch until CDP answers p50, service ÷ the service before the sandbox", f.svcLaunch, f.beforeLaunch, 50, launchRatioGoal),
			ratio("Browser launch until CDP answers p95, service ÷ the service before the sandbox", f.svcLaunch, f.beforeLaunch, 95, 0),
			ratio("Browser launch until CDP answers p50, service ÷ bare Chromium", f.svcLaunch, f.bareLaunch, 50, 0),
		}
	}
	rows := append(launch,
		goalRow{"Connect + new page through the relay p50", fmt.Sprintf("%.1f ms (bare Chromium %.1f ms)", connect, pct(f.bareConnect, 50)), fmt.Sprintf("≤ %d ms", relayConnectGoalMs), verdict(connect <= relayConnectGoalMs)},
		ratio("CDP round trip p50, relay ÷ bare Chromium's DevTools WebSocket", f.svcRoundTrip, f.bareRoundTrip, 50, roundTripRatioGoal),
		ratio("CDP round trip p99, relay ÷ bare Chromium's DevTools WebSocket", f.svcRoundTrip, f.bareRoundTrip, 99, 0),
	)
	if len(f.beforeDeviceFirstPage) > 0 {
		rows = append(rows,
			ratio("Launch to a first page p50, service ÷ the service before the device model", f.svcFirstPage, f.beforeDeviceFirstPage, 50, firstPageRatioGoal),
			ratio("Launch to a first page p95, service ÷ the service before the device model", f.svcFirstPage, f.beforeDeviceFirstPage, 95, 0),
		)
	}
	if len(f.fwdRoundTrip) > 0 {
		rows = append(rows, ratio("CDP round trip p50, plain Go TCP forwarder ÷ bare Chromium's DevTools WebSocket (the floor of a Go relay)", f.fwdRoundTrip, f.bareRoundTrip, 50, 0))
	}
	return rows
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// markdown renders the report.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	dirty := "clean tree"
	if r.dirty {
		dirty = "with uncommitted changes"
	}
	p("# Side-by-side benchmark\n\n")
	p("`make bench`, %s, commit `%s` (%s); the run took %v.\n\n", r.when.UTC().Format("2006-01-02 15:04 MST"), r.commit, dirty, r.took)
	p("| machine | |\n|---|---|\n")
	for _, m := range r.machine {
		p("| %s | %s |\n", m[0], m[1])
	}
	p("\nLoad: closed loop, %d keep-alive connections per server from a raw HTTP/1.1 client in the bench process; "+
		"each server warms up %v, then %d rounds of %v, servers taking turns (A/B); figures are medians of the rounds; latency is per request (per launch and release pair for launch+release). "+
		"Limit servers are separate processes: bare net/http with a fixed 1 KB profile body; net/http + pgx pool of 8 reading a row by primary key, or a team's newest 50 rows; "+
		"the same committing a row and an outbox row in one transaction. "+
		"CPU columns: the server's and the load generator's CPU time over a round, in %% of one core.\n\n", r.load.conns, r.load.warmup, r.load.rounds, r.load.round)

	p("## Goals (issues #14, #28)\n\n| goal | measured | target | met |\n|---|---|---|---|\n")
	for _, g := range r.goals() {
		p("| %s | %s | %s | %s |\n", g.goal, g.measured, g.target, g.met)
	}

	p("\n## Requests\n\n| backend | workload | server | throughput | p50 ms | p99 ms | server CPU | client CPU | errors |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.targets {
		if !t.fig.ran {
			continue
		}
		p("| %s | %s | %s | %.0f %s | %.2f | %.2f | %.0f %% | %.0f %% | %d |\n", t.backend, t.workload, t.server, t.fig.rate, t.unit, t.fig.p50, t.fig.p99, t.fig.serverCPU, t.fig.clientCPU, t.fig.errors)
	}

	if len(r.hookFigs) > 0 {
		p("\n## Webhooks\n\nOne endpoint subscribed to profile.created on a local receiver that answers 200 at once, sharing the machine with the service and its database. "+
			"Three phases on one database. Steady: %d creates/s for %v with delivery on; lag from the event's created_at to its first arrival. "+
			"Alongside: a burst of %d creates at full speed (%d connections) with delivery on in the same instance; deliveries/s from the first create to the last arrival, "+
			"which is bound by the create path as much as by the pipeline (for comparison only). "+
			"Backlog, the pipeline's own rate: the same burst queued in the outbox by an instance with WEBHOOK_DELIVERY=off, which is then stopped; "+
			"an instance with delivery on starts on the same database, and deliveries/s count from its launch (start-up included) to the last arrival, "+
			"with drain rates over the first and the last n arrivals. Each burst is cut short after %v. "+
			"Attempts recorded: every event that arrived, in any phase, has a succeeded delivery with its attempt recorded.\n\n",
			r.hooks.steadyRate, r.hooks.steadyFor, r.hooks.burst, r.hooks.conns, r.hooks.burstFor)
		p("| backend | steady p50 ms | steady p99 ms | alongside: created | creates/s | deliveries/s | backlog: queued | delivered | deliveries/s | first n /s | last n /s | last ÷ first | attempts recorded |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, h := range r.hookFigs {
			p("| %s | %.1f | %.1f | %d | %.0f | %.0f | %d | %d | %.0f | %.0f (n=%d) | %.0f | %.2f | %d of %d |\n", h.backend, h.p50, h.p99, h.created, h.createRate, h.alongsideRate,
				h.queued, h.arrived, h.rate, h.firstRate, h.window, h.lastRate, safeDiv(h.lastRate, h.firstRate), h.recorded, h.expected)
		}
	}

	p("\n## Process\n\n| backend | start to /healthz (median of %d) | first start, fresh database | idle RSS | RSS after load |\n|---|---|---|---|---|\n", r.restarts)
	for _, in := range r.instances {
		p("| %s | %.0f ms | %.0f ms | %.1f MB | %.1f MB |\n", in.name, ms(medianDuration(in.starts)), ms(in.firstStart), in.idleRSS, in.loadRSS)
	}

	if r.mixed != nil {
		r.mixed.section(p)
	}
	r.browserSection(p)
	r.liveSection(p)
	r.fleetSection(p)

	var notes []string
	notes = append(notes, r.skipped...)
	if r.browsersSkipped != "" {
		notes = append(notes, r.browsersSkipped)
	}
	for _, t := range r.targets {
		if t.fig.errors > 0 {
			notes = append(notes, fmt.Sprintf("%s, %s, %s: %d errors, first: %s", t.backend, t.workload, t.server, t.fig.errors, t.fig.firstError))
		}
	}
	for _, h := range r.hookFigs {
		for _, pr := range h.problems {
			notes = append(notes, h.backend+" webhooks: "+pr)
		}
		if h.repeats > 0 {
			notes = append(notes, fmt.Sprintf("%s webhooks: %d repeated deliveries", h.backend, h.repeats))
		}
		if h.unfinished > 0 {
			notes = append(notes, fmt.Sprintf("%s webhooks: %d deliveries pending or failed at the end", h.backend, h.unfinished))
		}
	}
	if len(notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range notes {
			p("- %s\n", strings.Join(strings.Fields(n), " "))
		}
	}
	return b.String()
}

// browserSection renders the browser figures, or the line that says why
// there are none.
func (r *report) browserSection(p func(format string, args ...any)) {
	if r.browsersSkipped != "" {
		p("\n## Browsers\n\n%s\n", r.browsersSkipped)
		return
	}
	f := r.browsers
	if f == nil {
		return
	}
	o := r.browserOpts
	p("\n## Browsers\n\n%s, headless, one blank tab. Service: SQLite, BROWSER_RUNTIME=chromium, each browser in its bubblewrap sandbox with CDP over the pipe, "+
		"reached through the relay (cdpUrl). Bare: the same binary started by the bench as the runtime started it before the sandbox "+
		"(the runtime's flags with --remote-debugging-port=0 instead of the pipe, no proxy, --no-sandbox as root), reached on its DevTools WebSocket. "+
		"Launch: POST /launch, or the exec, until Browser.getVersion is answered on a new WebSocket; %d of each after one unmeasured round, the kinds taking turns. "+
		"Release: POST /release (cookies read, Browser.close, the directory packed and stored, the lease ended); for the bare browser SIGKILL to its group until none of it runs, and its directory removed. "+
		"Connect + new page: dial, Target.createTarget about:blank, Target.attachToTarget flatten until its answer (page closed afterwards, unmeasured), %d of each, alternating, on one running browser of each kind. "+
		"Round trip: Runtime.evaluate of 1 on an attached page, %d sequential calls of each in blocks of 100, taking turns with a third page: the bare browser's reached through a plain Go TCP forwarder (the limit server's forward mode, io.Copy both ways, a process of its own), the least a Go process in the middle of the connection adds. "+
		"Memory: each browser alone, as launched with one client connected, once settled; the sum over its processes (for the service, every process below it: bwrap and the browser), median of %d by PSS. "+
		"PSS shares Chromium's code out among every process that maps it, other browsers on the machine included, so it is lower while other Chromiums run; USS, the pages no other process maps, is not.\n\n",
		orDash(f.product), o.launches, o.connects, o.roundTrips, o.memory)
	p("| figure | service: sandbox + relay | bare Chromium | service ÷ bare |\n|---|---|---|---|\n")
	row := func(name string, a, b float64, unit string) {
		p("| %s | %.2f %s | %.2f %s | %.2f |\n", name, a, unit, b, unit, safeDiv(a, b))
	}
	row("launch until CDP answers, p50", pct(f.svcLaunch, 50), pct(f.bareLaunch, 50), "ms")
	row("launch until CDP answers, p95", pct(f.svcLaunch, 95), pct(f.bareLaunch, 95), "ms")
	row("release (bare: kill and remove), p50", pct(f.svcRelease, 50), pct(f.bareKill, 50), "ms")
	row("release (bare: kill and remove), p95", pct(f.svcRelease, 95), pct(f.bareKill, 95), "ms")
	row("connect + new page, p50", pct(f.svcConnect, 50), pct(f.bareConnect, 50), "ms")
	row("connect + new page, p95", pct(f.svcConnect, 95), pct(f.bareConnect, 95), "ms")
	row("Runtime.evaluate round trip, p50", pct(f.svcRoundTrip, 50), pct(f.bareRoundTrip, 50), "ms")
	row("Runtime.evaluate round trip, p99", pct(f.svcRoundTrip, 99), pct(f.bareRoundTrip, 99), "ms")
	if len(f.fwdRoundTrip) > 0 {
		row("Runtime.evaluate round trip, p50, bare Chromium through a plain Go TCP forwarder (in place of the service)", pct(f.fwdRoundTrip, 50), pct(f.bareRoundTrip, 50), "ms")
	}
	row("memory per browser, PSS", float64(f.svcMemory.pss)/(1<<20), float64(f.bareMemory.pss)/(1<<20), "MB")
	row("memory per browser, USS (pages of its own)", float64(f.svcMemory.uss)/(1<<20), float64(f.bareMemory.uss)/(1<<20), "MB")
	row("memory per browser, RSS (shared pages in every process)", float64(f.svcMemory.rss)/(1<<20), float64(f.bareMemory.rss)/(1<<20), "MB")
	p("| processes per browser | %d | %d | |\n", f.svcMemory.processes, f.bareMemory.processes)
	if len(f.beforeDeviceFirstPage) > 0 {
		p("\nThe service before the device model (%s: the fingerprint's user agent, language, time zone and screen size only), built from that revision: "+
			"launch until a first page has loaded (POST /launch, connect through the cdpUrl, Target.createTarget, Target.attachToTarget flat, Page.enable, "+
			"Page.navigate to a page of the bench's on loopback, until Page.loadEventFired), %d of each after one unmeasured round, taking turns; and its memory per browser as above:\n\n", o.beforeDevice, o.launches)
		p("| figure | service | service before the device model | after ÷ before |\n|---|---|---|---|\n")
		row("launch to a first page, p50", pct(f.svcFirstPage, 50), pct(f.beforeDeviceFirstPage, 50), "ms")
		row("launch to a first page, p95", pct(f.svcFirstPage, 95), pct(f.beforeDeviceFirstPage, 95), "ms")
		row("memory per browser, PSS", float64(f.svcMemory.pss)/(1<<20), float64(f.beforeDeviceMemory.pss)/(1<<20), "MB")
		row("memory per browser, USS (pages of its own)", float64(f.svcMemory.uss)/(1<<20), float64(f.beforeDeviceMemory.uss)/(1<<20), "MB")
	}
	if len(f.beforeLaunch) == 0 {
		return
	}
	p("\nThe service before the sandbox (%s: the browser unconfined, a DevTools port behind the relay, --no-sandbox as root), built from that revision and run beside the service in the same launch turns:\n\n", o.before)
	p("| figure | service: sandbox + relay | service before the sandbox | after ÷ before |\n|---|---|---|---|\n")
	row("launch until CDP answers, p50", pct(f.svcLaunch, 50), pct(f.beforeLaunch, 50), "ms")
	row("launch until CDP answers, p95", pct(f.svcLaunch, 95), pct(f.beforeLaunch, 95), "ms")
	row("release, p50", pct(f.svcRelease, 50), pct(f.beforeRelease, 50), "ms")
	row("release, p95", pct(f.svcRelease, 95), pct(f.beforeRelease, 95), "ms")
}
