//go:build linux

// Command sidebyside is `make bench`: it builds the service and the limit
// servers, runs them as processes under the same closed-loop load in A/B
// rounds, measures webhook delivery, start time and memory, sets the
// service's sandboxed browsers beside a bare Chromium (browsers.go), times
// launches across a fleet of instances (fleet.go), and prints one markdown
// table (also written to tests/bench/RESULTS.md).
// Without a reachable PostgreSQL or Redis, Chromium or bubblewrap it runs
// what it can and says what it skipped. It runs on Linux alone: its
// figures come from /proc, and its processes die with it (Pdeathsig).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

type options struct {
	goTool, out     string
	database, redis string
	only            string
	profiles        int
	restarts        int
	load            loadOptions
	hooks           hookOptions
	browsers        browserOptions
	mixed           mixedOptions
	live            liveOptions
	fleet           fleetOptions
}

func main() {
	var o options
	flag.StringVar(&o.goTool, "go", "go", "the go command that builds the binaries")
	flag.StringVar(&o.out, "out", "tests/bench/RESULTS.md", "where the table is written (empty: nowhere)")
	flag.StringVar(&o.database, "database", "", "PostgreSQL URL (empty: PostgreSQL runs skipped)")
	flag.StringVar(&o.redis, "redis", "", "Redis URL (empty: Redis runs skipped)")
	flag.StringVar(&o.only, "only", "", "comma-separated parts to run: backend keys (sqlite, sqlitenocache, pg, pgcache), mixed, browsers, live and fleet; empty: all")
	flag.IntVar(&o.profiles, "profiles", 100, "profiles seeded per service (at least 50 and one per connection)")
	flag.IntVar(&o.restarts, "starts", 5, "measured starts per service")
	flag.IntVar(&o.load.conns, "conns", 64, "connections per server")
	flag.DurationVar(&o.load.warmup, "warmup", time.Second, "warm-up per server and workload")
	flag.DurationVar(&o.load.round, "round", 3*time.Second, "duration of one round")
	flag.IntVar(&o.load.rounds, "rounds", 5, "A/B rounds")
	flag.IntVar(&o.hooks.burst, "burst", 20000, "webhook burst size (0: no webhook figures)")
	flag.IntVar(&o.hooks.steadyRate, "steady-rate", 100, "steady events per second")
	flag.DurationVar(&o.hooks.steadyFor, "steady-for", 20*time.Second, "steady phase duration")
	flag.DurationVar(&o.hooks.burstFor, "burst-for", 90*time.Second, "longest a burst may take, creates and drain")
	flag.IntVar(&o.browsers.launches, "browser-launches", 20, "launches of the service's browser and of the bare Chromium each")
	flag.IntVar(&o.browsers.connects, "browser-connects", 50, "connects + new page through the relay and to the bare Chromium each")
	flag.IntVar(&o.browsers.roundTrips, "browser-round-trips", 2000, "Runtime.evaluate round trips through the relay and to the bare Chromium each")
	flag.StringVar(&o.browsers.before, "browser-before", "cab2e0a^", "git revision of the service before the browser sandbox, launched beside it (empty: none)")
	flag.StringVar(&o.browsers.beforeDevice, "browser-before-device", "d864eca^", "git revision of the service before the device model, launched to a first page beside it (empty: none)")
	flag.IntVar(&o.browsers.memory, "browser-memory", 3, "browsers of each kind whose memory is read (the median is shown)")
	flag.StringVar(&o.mixed.before, "mixed-before", "77e5729", "git revision of the service the mixed open-loop load compares this tree with (empty: no mixed load)")
	mixedRates := flag.String("mixed-rates", "1000,2000", "comma-separated request rates of the mixed open-loop load")
	flag.DurationVar(&o.mixed.round, "mixed-round", 10*time.Second, "duration of one round of the mixed load")
	flag.IntVar(&o.mixed.rounds, "mixed-rounds", 3, "rounds of the mixed load at each rate")
	flag.IntVar(&o.mixed.conns, "mixed-conns", 256, "requests in flight at most in the mixed load, and connections of its saturation run")
	flag.DurationVar(&o.live.window, "live-window", 10*time.Second, "window over which the live view's frames are counted")
	flag.IntVar(&o.live.clicks, "live-clicks", 30, "clicks timed through the live view")
	flag.IntVar(&o.fleet.launches, "fleet-launches", 20, "launches answered locally and placed elsewhere each, for the fleet's placement overhead")
	flag.IntVar(&o.fleet.clients, "fleet-clients", 6, "clients of the fleet's closed loop, each launching and releasing a profile of its own")
	flag.DurationVar(&o.fleet.duration, "fleet-for", 20*time.Second, "duration of the fleet's closed loop on one instance and on three")
	flag.IntVar(&o.fleet.browsers, "fleet-browsers", 4, "BROWSERS_MAX of each of the fleet's three instances (the one instance gets three times it)")
	flag.Parse()
	o.hooks.conns = o.load.conns
	for r := range strings.SplitSeq(*mixedRates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || rate <= 0 {
			fmt.Fprintln(os.Stderr, "bench: -mixed-rates must list positive numbers")
			os.Exit(2)
		}
		o.mixed.rates = append(o.mixed.rates, rate)
	}
	if o.live.window <= 0 || o.live.clicks < 1 {
		fmt.Fprintln(os.Stderr, "bench: -live-window must be positive and -live-clicks at least 1")
		os.Exit(2)
	}
	if o.fleet.launches < 1 || o.fleet.clients < 1 || o.fleet.duration <= 0 || o.fleet.browsers < 1 {
		fmt.Fprintln(os.Stderr, "bench: -fleet-launches, -fleet-clients and -fleet-browsers must be at least 1 and -fleet-for positive")
		os.Exit(2)
	}
	if o.browsers.launches < 1 || o.browsers.connects < 1 || o.browsers.roundTrips < 1 || o.browsers.memory < 1 {
		fmt.Fprintln(os.Stderr, "bench: every -browser-* count must be at least 1")
		os.Exit(2)
	}
	if o.profiles < max(50, o.load.conns) {
		fmt.Fprintln(os.Stderr, "bench: -profiles must be at least 50 and -conns")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "profilesvc-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var cleanup []func()
	defer func() {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()

	rep := &report{when: time.Now(), load: o.load, hooks: o.hooks, restarts: o.restarts}
	rep.commit, rep.dirty = gitState()
	rep.machine = machine()
	loadBefore := loadAverage()

	pgVersion, pgErr := postgresVersion(ctx, o.database)
	if pgErr != nil {
		rep.skipped = append(rep.skipped, "PostgreSQL runs and the pgx limit servers skipped: "+pgErr.Error())
	}
	redisVersion, redisErr := redisInfo(ctx, o.redis)
	if redisErr != nil {
		rep.skipped = append(rep.skipped, "Redis runs skipped: "+redisErr.Error())
	}
	rep.machine = append(rep.machine, [2]string{"PostgreSQL", orDash(pgVersion)}, [2]string{"Redis", orDash(redisVersion)})
	if pgErr == nil {
		vacuum, restore, err := autovacuumOn(ctx, o.database)
		if err != nil {
			return err
		}
		cleanup = append(cleanup, restore)
		rep.machine = append(rep.machine, [2]string{"PostgreSQL autovacuum", vacuum})
	}

	fmt.Fprintln(os.Stderr, "building the service and the limit server")
	svcBin, err := build(o.goTool, dir, "./cmd/profilesvc", "profilesvc")
	if err != nil {
		return err
	}
	limitBin, err := build(o.goTool, dir, "./tests/bench/limitserver", "limitserver")
	if err != nil {
		return err
	}
	svcRaw, err := os.ReadFile(svcBin)
	if err != nil {
		return err
	}

	prefix := fmt.Sprintf("bench_%d_", os.Getpid())
	schemaURL := func(name string) (string, error) {
		if err := pgExec(ctx, o.database, `CREATE SCHEMA "`+prefix+name+`"`); err != nil {
			return "", err
		}
		cleanup = append(cleanup, func() { _ = pgExec(context.Background(), o.database, `DROP SCHEMA "`+prefix+name+`" CASCADE`) })
		u, err := url.Parse(o.database)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set("search_path", prefix+name)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	if redisErr == nil {
		cleanup = append(cleanup, func() { dropRedisKeys(o.redis, prefix) })
	}

	limits := map[string]*proc{}
	bare, err := startLimit(limitBin, dir, "bare")
	if err != nil {
		return err
	}
	cleanup = append(cleanup, bare.stop)
	limits["bare"] = bare
	if pgErr == nil {
		limitURL, err := schemaURL("limit")
		if err != nil {
			return err
		}
		// The rows hold a device as the service's do.
		schema := strings.ReplaceAll(limitSchema, "{device}", strings.ReplaceAll(string(load.ProfileDevice()), "'", "''"))
		if err := pgExec(ctx, limitURL, schema); err != nil {
			return fmt.Errorf("limit tables: %w", err)
		}
		if err := analyze(ctx, limitURL); err != nil {
			return fmt.Errorf("limit tables: analyze: %w", err)
		}
		for _, mode := range []string{"read", "tx"} {
			p, err := startLimit(limitBin, dir, mode, "-database", limitURL)
			if err != nil {
				return err
			}
			cleanup = append(cleanup, p.stop)
			limits[mode] = p
		}
	}

	selected := func(key string) bool { return o.only == "" || slices.Contains(strings.Split(o.only, ","), key) }
	for _, b := range backends {
		if !selected(b.key) {
			continue
		}
		switch {
		case b.requires != "" && !bytes.Contains(svcRaw, []byte(b.requires)):
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s skipped: the service has no %s yet", b.name, b.requires))
			continue
		case b.needs("{postgres}") && pgErr != nil, b.needs("{redis}") && redisErr != nil:
			rep.skipped = append(rep.skipped, b.name+" skipped: its database or Redis is not reachable")
			continue
		}
		vars := map[string]string{"redis": o.redis, "redisPrefix": prefix}
		if b.needs("{postgres}") {
			if vars["postgres"], err = schemaURL(b.key); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "starting %s (%d starts)\n", b.name, o.restarts+1)
		// A row that cannot start or be seeded is reported, not fatal: the
		// other rows still give their figures.
		in, err := launch(ctx, svcBin, dir, b, vars, o.restarts)
		if err != nil {
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s skipped: %v", b.name, err))
			continue
		}
		// in.proc changes when the webhook figures restart the instance.
		cleanup = append(cleanup, func() { in.proc.stop() })
		err = in.settle()
		if err == nil {
			err = in.seed(o.profiles)
		}
		if err == nil && vars["postgres"] != "" {
			err = analyze(ctx, vars["postgres"])
		}
		if err != nil {
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s skipped: %v", b.name, err))
			continue
		}
		rep.instances = append(rep.instances, in)
	}
	if len(rep.instances) == 0 && !selected("browsers") && !selected("mixed") && !selected("live") && !selected("fleet") {
		return errors.New("no backend could run")
	}

	// Comparisons: reads against the limit of their store, then creates,
	// then launch+release.
	per := map[string]map[string]*target{}
	for _, in := range rep.instances {
		per[in.key] = serviceTargets(in, o.load.conns)
	}
	readLimit := func(in *instance) string {
		if in.needs("{postgres}") {
			return "read"
		}
		return "bare"
	}
	for _, lim := range []string{"bare", "read"} {
		var group []*target
		for _, in := range rep.instances {
			if readLimit(in) == lim {
				group = append(group, per[in.key]["get-key"], per[in.key]["get-jwt"], per[in.key]["list50"])
			}
		}
		if len(group) == 0 || limits[lim] == nil {
			continue
		}
		if lim == "bare" {
			group = append(group, limitTarget("limit/bare", "GET profile", "net/http, fixed 1 KB body", limits[lim], 200, getRequest("/api/v1/profiles/prf_limit"), o.load.conns))
		} else {
			group = append(group,
				limitTarget("limit/read", "GET profile", "net/http + pgx pool 8, row by key", limits[lim], 200, getRequest("/profiles/prf_limit_read"), o.load.conns),
				limitTarget("limit/list50", "list of 50", "net/http + pgx pool 8, 50 rows by team", limits[lim], 200, getRequest("/profiles?limit=50"), o.load.conns))
		}
		compare("reads against "+lim, group, o.load)
		rep.targets = append(rep.targets, group...)
	}
	var creates, launches []*target
	for _, in := range rep.instances {
		creates = append(creates, per[in.key]["create"])
		launches = append(launches, per[in.key]["launch"])
	}
	if tx := limits["tx"]; tx != nil && len(creates) > 0 {
		creates = append(creates, limitTarget("limit/tx", "create", "net/http + pgx pool 8, tx of 2 inserts", tx, 201,
			createRequest(), o.load.conns))
	}
	compare("creates", creates, o.load)
	compare("launch+release", launches, o.load)
	rep.targets = append(rep.targets, creates...)
	rep.targets = append(rep.targets, launches...)

	// A service is stopped after its webhook figures, so that what its
	// pipeline still has to deliver does not load the next one's; its RSS
	// after load is read just before.
	for _, in := range rep.instances {
		if o.hooks.burst == 0 || !in.webhooks {
			continue
		}
		rcv, err := newReceiver()
		if err != nil {
			return err
		}
		f, err := measureHooks(ctx, in, rcv, o.hooks)
		if err != nil {
			return fmt.Errorf("%s webhooks: %w", in.name, err)
		}
		rep.hookFigs = append(rep.hookFigs, f)
		if in.loadRSS, err = in.proc.rssMB(); err != nil {
			return err
		}
		in.proc.stop()
		_ = rcv.srv.Close()
	}
	for _, in := range rep.instances {
		if in.loadRSS == 0 {
			if in.loadRSS, err = in.proc.rssMB(); err != nil {
				return err
			}
		}
	}
	// The mixed load: the service at a revision and this tree, fresh.
	switch {
	case !selected("mixed") || o.mixed.before == "":
	case pgErr != nil || redisErr != nil:
		rep.skipped = append(rep.skipped, "Mixed load skipped: it runs on PostgreSQL + Redis, not reachable")
	default:
		fmt.Fprintln(os.Stderr, "building the service at "+o.mixed.before+" for the mixed load")
		beforeBin, err := buildAt(o.goTool, dir, o.mixed.before, "./cmd/profilesvc", "profilesvc-mixed-before")
		if err == nil {
			rep.mixed, err = measureMixed(ctx, beforeBin, svcBin, dir, func(key string) (map[string]string, error) {
				u, err := schemaURL(key)
				return map[string]string{"postgres": u, "redis": o.redis, "redisPrefix": prefix}, err
			}, o.profiles, o.mixed)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mixed load:", err)
			rep.skipped = append(rep.skipped, "Mixed load not measured: "+err.Error())
		}
	}
	// The browsers come last, with the other services idle or stopped.
	if selected("browsers") {
		chromiumPath, bwrapPath, why := findBrowser()
		if why != "" {
			fmt.Fprintln(os.Stderr, "browsers skipped: "+why)
			rep.browsersSkipped = "Browser figures skipped: " + why
		} else {
			fmt.Fprintln(os.Stderr, "starting the service with Chromium ("+chromiumPath+") in bubblewrap ("+bwrapPath+")")
			// A failure is reported, not fatal: the figures above stand.
			var beforeBin string
			if o.browsers.before != "" {
				fmt.Fprintln(os.Stderr, "building the service as it was before the sandbox ("+o.browsers.before+")")
				if beforeBin, err = buildAt(o.goTool, dir, o.browsers.before, "./cmd/profilesvc", "profilesvc-before"); err != nil {
					fmt.Fprintln(os.Stderr, "browsers:", err)
					rep.skipped = append(rep.skipped, "The service before the sandbox not measured: "+err.Error())
				}
			}
			var beforeDeviceBin string
			if o.browsers.beforeDevice != "" {
				fmt.Fprintln(os.Stderr, "building the service as it was before the device model ("+o.browsers.beforeDevice+")")
				if beforeDeviceBin, err = buildAt(o.goTool, dir, o.browsers.beforeDevice, "./cmd/profilesvc", "profilesvc-before-device"); err != nil {
					fmt.Fprintln(os.Stderr, "browsers:", err)
					rep.skipped = append(rep.skipped, "The service before the device model not measured: "+err.Error())
				}
			}
			rep.browsers, err = measureBrowsers(ctx, browserBins{svc: svcBin, before: beforeBin, limit: limitBin, beforeDevice: beforeDeviceBin}, dir, chromiumPath, bwrapPath, o.browsers)
			if err != nil {
				fmt.Fprintln(os.Stderr, "browsers:", err)
				rep.browsersSkipped = "Browser figures not taken: " + err.Error()
			}
			rep.browserOpts = o.browsers
		}
	}
	// The live view, on a service of its own with an automation client.
	if selected("live") {
		if chromiumPath, bwrapPath, why := findBrowser(); why != "" {
			rep.liveSkipped = "Live view figures skipped: " + why
		} else {
			fmt.Fprintln(os.Stderr, "measuring the live view beside an automation client")
			if rep.live, err = measureLive(ctx, svcBin, dir, chromiumPath, bwrapPath, o.live); err != nil {
				fmt.Fprintln(os.Stderr, "live view:", err)
				rep.liveSkipped = "Live view figures not taken: " + err.Error()
			}
		}
	}
	// The fleet: instances of its own on PostgreSQL, each with Chromium.
	if selected("fleet") {
		chromiumPath, bwrapPath, why := findBrowser()
		switch {
		case pgErr != nil:
			rep.fleetSkipped = "Fleet figures skipped: the instances of a fleet share a PostgreSQL database, not reachable"
		case why != "":
			rep.fleetSkipped = "Fleet figures skipped: " + why
		default:
			fmt.Fprintln(os.Stderr, "measuring launches across a fleet of instances")
			rep.fleet, err = measureFleet(ctx, svcBin, dir, chromiumPath, bwrapPath, func(key string) (map[string]string, error) {
				u, err := schemaURL(key)
				return map[string]string{"postgres": u, "redisPrefix": prefix}, err
			}, o.fleet)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fleet:", err)
				rep.fleetSkipped = "Fleet figures not taken: " + err.Error()
			}
			rep.fleetOpts = o.fleet
		}
	}
	rep.machine = append(rep.machine, [2]string{"load average (1 min) before / after", loadBefore + " / " + loadAverage()})
	rep.took = time.Since(rep.when).Round(time.Second)

	md := rep.markdown()
	fmt.Print(md)
	if o.out != "" {
		return os.WriteFile(o.out, []byte(md), 0o644)
	}
	return nil
}

func getRequest(path string) load.Request { return load.Request{Method: "GET", Path: path} }

func createRequest() load.Request {
	return load.Request{Method: "POST", Path: "/profiles", Body: []byte(createBody)}
}

// limitSchema is the limit servers' pair of tables, shaped like profiles
// and outbox_events, the row the read limit serves and the team whose
// page of 50 it lists; {device} is the device every row holds.
const limitSchema = `
CREATE TABLE limit_profiles (
    id text COLLATE "C" PRIMARY KEY, team_id text NOT NULL, name text NOT NULL, template_id text NOT NULL,
    browser text NOT NULL, user_agent text NOT NULL, platform text NOT NULL, locale text NOT NULL, timezone text NOT NULL,
    screen_width integer NOT NULL, screen_height integer NOT NULL, proxy_id text, notes text NOT NULL,
    version integer NOT NULL, created_by text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    session_id text, device text NOT NULL DEFAULT '');
CREATE INDEX limit_profiles_team_id_idx ON limit_profiles (team_id, id);
CREATE TABLE limit_outbox (
    id text COLLATE "C" PRIMARY KEY, team_id text NOT NULL, type text NOT NULL, occurred_at timestamptz NOT NULL,
    data json NOT NULL, created_at timestamptz NOT NULL, dispatched_at timestamptz);
CREATE INDEX limit_outbox_undispatched_idx ON limit_outbox (id) WHERE dispatched_at IS NULL;
INSERT INTO limit_profiles VALUES ('prf_limit_read', 'team_bench', 'seed 42', 'tpl_chrome_win_us', 'chrome',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Win32', 'en-US', 'America/New_York', 1920, 1080, NULL, '', 1, 'usr_bench', now(), now(), NULL, '{device}');
INSERT INTO limit_profiles SELECT 'prf_limit_page_' || lpad(i::text, 3, '0'), 'team_bench', 'seed ' || i, 'tpl_chrome_win_us', 'chrome',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Win32', 'en-US', 'America/New_York', 1920, 1080, NULL, '', 1, 'usr_bench', now(), now(), NULL, '{device}' FROM generate_series(1, 60) AS i;`

func pgExec(ctx context.Context, databaseURL, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// autovacuumOn makes sure PostgreSQL's autovacuum runs during the bench,
// as it does on every production server: a server configured without it
// (CI machines may be) never analyzes the bench's tables, and a list of 50
// on a table never analyzed was planned as a read and sort of all the
// team's profiles, 3.7 ms at 2,100 of them against 0.09 ms once analyzed.
// It turns it on for the run if it is off (ALTER SYSTEM, then a reload;
// that needs a superuser) and restore sets the server back; it says what
// the run had.
func autovacuumOn(ctx context.Context, databaseURL string) (state string, restore func(), err error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	var on string
	if err := conn.QueryRow(ctx, "SHOW autovacuum").Scan(&on); err != nil {
		return "", nil, err
	}
	if on == "on" {
		return "on", func() {}, nil
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET autovacuum = on"); err != nil {
		// The figures are still taken, and the table says on what.
		fmt.Fprintln(os.Stderr, "PostgreSQL runs without autovacuum and it could not be turned on for the bench:", err)
		return "off (it could not be turned on: " + err.Error() + ")", func() {}, nil
	}
	restore = func() {
		_ = pgExec(context.Background(), databaseURL, "ALTER SYSTEM RESET autovacuum")
		_ = pgExec(context.Background(), databaseURL, "SELECT pg_reload_conf()")
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		restore()
		return "", nil, err
	}
	fmt.Fprintln(os.Stderr, "PostgreSQL runs without autovacuum: turned on for the bench, set back after")
	return "on for the run (the server's configuration has it off)", restore, nil
}

// analyze gathers the planner's statistics of every table in the schema
// databaseURL's search_path names, as a database that has been running
// has them: autovacuum takes up to a minute to first analyze a new table.
func analyze(ctx context.Context, databaseURL string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT format('ANALYZE %I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = current_schema()")
	if err != nil {
		return err
	}
	statements, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, st := range statements {
		if _, err := conn.Exec(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func postgresVersion(ctx context.Context, databaseURL string) (string, error) {
	if databaseURL == "" {
		return "", errors.New("no database URL given")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var v string
	err = conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

func redisInfo(ctx context.Context, redisURL string) (string, error) {
	if redisURL == "" {
		return "", errors.New("no Redis URL given")
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return "", err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "unknown", nil
}

// dropRedisKeys removes what the services stored under the run's prefix.
func dropRedisKeys(redisURL, prefix string) {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}

func gitState() (commit string, dirty bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	commit = strings.TrimSpace(string(out))
	// The table this run writes does not make the tree it measures dirty.
	status, _ := exec.Command("git", "status", "--porcelain", "--", ".", ":!tests/bench/RESULTS.md").Output()
	return commit, len(bytes.TrimSpace(status)) > 0
}

func machine() [][2]string {
	m := [][2]string{{"CPU", "unknown"}, {"cores", fmt.Sprint(runtime.NumCPU())}, {"RAM", "unknown"}, {"Go", runtime.Version()}, {"OS", runtime.GOOS + "/" + runtime.GOARCH}}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m[0][1] = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(raw), "MemTotal: %d kB", &kb); err == nil {
			m[2][1] = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return m
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(raw))[0]
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
