//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fleet figures: instances of the service sharing one PostgreSQL
// database form one browser fleet, and a launch that the receiving
// instance has no room for is placed on another. What a user feels of it:
// how much longer a launch takes to answer when it is placed elsewhere (a
// read of the registry, a signed call to the other instance, its answer
// passed back) than when the receiving instance runs it itself, and how
// many launches a second three instances answer beside one instance with
// as many browser places, every request sent to the first instance as a
// user without a balancer sends them. Every instance is a process of its
// own with its own NODE_URL, DATA_DIR and TMPDIR, on a schema of its
// deployment's own.

// fleetOptions say how many samples the fleet figures take.
type fleetOptions struct {
	launches int           // launches of each kind (local, placed elsewhere)
	clients  int           // clients of the closed loop
	duration time.Duration // the closed loop's window on each deployment
	browsers int           // BROWSERS_MAX of each of the three instances
}

// The fleet's rhythm in the bench, as in the fleet's end-to-end tests: a
// beat every 200 ms, an instance gone after 2 s without one.
const (
	fleetHeartbeat = "200ms"
	fleetTimeout   = "2s"
)

// fleetFigures are what the fleet section measured.
type fleetFigures struct {
	// Launches answered when the receiving instance ran them itself, and
	// when it was full and placed them on the other instance.
	local, remote []time.Duration
	// What the receivers' metrics counted as placed elsewhere, over every
	// launch of each kind (the unmeasured round included).
	localPlaced, remotePlaced, perKind int
	// The closed loop on one instance and on three.
	one, three *fleetThroughput
}

// fleetThroughput is the closed loop on one deployment.
type fleetThroughput struct {
	instances, browsersMax int
	window                 time.Duration
	// launches are those answered 200 within the window; answered counts
	// every launch answered 200, those after the window included.
	launches []time.Duration
	releases []time.Duration
	answered int
	// placed is what the first instance's metrics counted as placed
	// elsewhere over the loop.
	placed     int
	errors     int
	firstError string
	// cpu is the machine's busy time over the window, in % of all its
	// cores (/proc/stat).
	cpu float64
}

// fleetDeployment is instances sharing one schema, with the account whose
// profiles they launch.
type fleetDeployment struct {
	nodes    []*instance
	jwt, key string
}

// stop ends every instance, the last started first.
func (d *fleetDeployment) stop() {
	for i := len(d.nodes) - 1; i >= 0; i-- {
		d.nodes[i].proc.stop()
	}
}

// startFleet starts one instance per entry of maxes (its BROWSERS_MAX) on
// the schema vars names, the first one's address as every instance's
// PUBLIC_URL; signs up through the first and waits until the fleet shows
// every instance.
func startFleet(ctx context.Context, bin, dir, name string, vars map[string]string, chromiumPath, bwrapPath string, maxes []int) (*fleetDeployment, error) {
	d := &fleetDeployment{}
	for i, m := range maxes {
		key := fmt.Sprintf("%s-%d", name, i)
		// The instance's own TMPDIR, inside its DATA_DIR.
		if err := os.MkdirAll(filepath.Join(dir, key, "tmp"), 0o700); err != nil {
			d.stop()
			return nil, err
		}
		env := map[string]string{
			"DATABASE_URL": "{postgres}", "BROWSER_RUNTIME": "chromium",
			"CHROMIUM_PATH": chromiumPath, "BWRAP_PATH": bwrapPath, "BROWSERS_MAX": strconv.Itoa(m),
			"NODE_URL": "http://{addr}", "PUBLIC_URL": "{public}", "TMPDIR": "{data}/tmp",
			"FLEET_HEARTBEAT": fleetHeartbeat, "FLEET_TIMEOUT": fleetTimeout,
			// The bench releases every browser before it stops an
			// instance; one left by a failed run is saved at once.
			"DRAIN_TIMEOUT": "0s",
		}
		v := map[string]string{"postgres": vars["postgres"], "redisPrefix": vars["redisPrefix"]}
		if i == 0 {
			env["PUBLIC_URL"] = "http://{addr}"
		} else {
			v["public"] = "http://" + d.nodes[0].addr
		}
		in, err := launch(ctx, bin, dir, backend{key: key, name: fmt.Sprintf("%s, instance %d", name, i+1), env: env}, v, 0)
		if err != nil {
			d.stop()
			return nil, err
		}
		d.nodes = append(d.nodes, in)
	}
	var err error
	if d.jwt, d.key, err = d.nodes[0].account("fleet@example.com"); err != nil {
		d.stop()
		return nil, err
	}
	if err := d.waitInstances(ctx, len(maxes)); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// waitInstances waits until GET /api/v1/fleet, asked of the first
// instance, shows n live instances: until then a launch could not be
// placed on one that has not beaten yet.
func (d *fleetDeployment) waitInstances(ctx context.Context, n int) error {
	var view struct {
		Data struct {
			Instances []struct {
				ID string `json:"id"`
			} `json:"instances"`
		} `json:"data"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := api(d.nodes[0].addr, "GET", "/api/v1/fleet", [2]string{"Authorization", "Bearer " + d.jwt}, nil, 200, &view)
		if err == nil && len(view.Data.Instances) == n {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the fleet did not show %d instances within 30 s: %d (%v)", n, len(view.Data.Instances), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// profiles creates n profiles through the first instance.
func (d *fleetDeployment) profiles(n int) ([]string, error) {
	var ids []string
	for i := range n {
		var created struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		body := map[string]any{"name": fmt.Sprintf("fleet %d", i), "templateId": "tpl_chrome_win_us", "proxy": nil}
		if err := api(d.nodes[0].addr, "POST", "/api/v1/profiles", [2]string{"X-API-Key", d.key}, body, 201, &created); err != nil {
			return nil, err
		}
		ids = append(ids, created.Data.ID)
	}
	return ids, nil
}

// fleetClient is one user's HTTP client, its connections its own.
type fleetClient struct {
	c   *http.Client
	key string
}

func newFleetClient(key string) *fleetClient {
	return &fleetClient{key: key, c: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

func (c *fleetClient) close() { c.c.CloseIdleConnections() }

// launchStatus is a launch that was answered, but not with 200.
type launchStatus struct {
	status int
	body   string
}

func (e *launchStatus) Error() string { return fmt.Sprintf("status %d: %.300s", e.status, e.body) }

// launch is POST /launch through the instance at addr, timed from the
// request sent until its 200 has been read; it returns the session's
// cdpUrl.
func (c *fleetClient) launch(addr, profile string) (time.Duration, string, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/profiles/"+profile+"/launch", strings.NewReader(`{"headless":true}`))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.key)
	t0 := time.Now()
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, "", err
	}
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, "", &launchStatus{status: resp.StatusCode, body: string(raw)}
	}
	var out struct {
		Data struct {
			Session browserSession `json:"session"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, "", err
	}
	if out.Data.Session.CDPURL == "" {
		return 0, "", fmt.Errorf("a launch answered without a cdpUrl: %.300s", raw)
	}
	return took, out.Data.Session.CDPURL, nil
}

// release is POST /release through the instance at addr, which hands it
// to the instance that runs the browser.
func (c *fleetClient) release(addr, profile string) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/profiles/"+profile+"/release", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", c.key)
	t0 := time.Now()
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, err
	}
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("release: status %d: %.300s", resp.StatusCode, raw)
	}
	return took, nil
}

// placedElsewhere reads profilesvc_launches_placed_elsewhere_total from
// the instance's /metrics.
func placedElsewhere(in *instance) (int, error) {
	resp, err := http.Get("http://" + in.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	const name = "profilesvc_launches_placed_elsewhere_total "
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no " + strings.TrimSpace(name) + " in /metrics")
}

// measureFleet takes the fleet figures: the placement overhead on two
// instances, then the closed loop on one instance and on three, each
// deployment on a schema of its own (schema gives its URL) and stopped
// before the next starts.
func measureFleet(ctx context.Context, bin, dir, chromiumPath, bwrapPath string, schema func(key string) (map[string]string, error), o fleetOptions) (*fleetFigures, error) {
	f := &fleetFigures{perKind: o.launches + 1}
	vars, err := schema("fleetplace")
	if err != nil {
		return nil, err
	}
	if err := measurePlacement(ctx, bin, dir, chromiumPath, bwrapPath, vars, o, f); err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	for _, d := range []struct {
		key   string
		maxes []int
		out   **fleetThroughput
	}{
		// One instance with the places of the three together: the
		// comparison is of processes on the same CPU, not of places.
		{"fleetone", []int{3 * o.browsers}, &f.one},
		{"fleetthree", []int{o.browsers, o.browsers, o.browsers}, &f.three},
	} {
		vars, err := schema(d.key)
		if err != nil {
			return nil, err
		}
		if *d.out, err = measureFleetThroughput(ctx, bin, dir, chromiumPath, bwrapPath, d.key, vars, d.maxes, o); err != nil {
			return nil, fmt.Errorf("%d instances: %w", len(d.maxes), err)
		}
	}
	return f, nil
}

// measurePlacement runs two instances: the receiver, with BROWSERS_MAX=1
// and a filler profile's browser running on it, so it is full, and the
// other with room. Local: a launch sent to the other instance, which runs
// it itself. Remote: the same launch sent to the receiver, which places it
// on the other. The same profile either way, so the browser starts on the
// same instance; the kinds take turns after one unmeasured round, and each
// launch is released (through the instance it was sent to) before the
// next.
func measurePlacement(ctx context.Context, bin, dir, chromiumPath, bwrapPath string, vars map[string]string, o fleetOptions, f *fleetFigures) error {
	fmt.Fprintln(os.Stderr, "fleet: starting two instances for the placement overhead")
	d, err := startFleet(ctx, bin, dir, "fleetplace", vars, chromiumPath, bwrapPath, []int{1, 2})
	if err != nil {
		return err
	}
	defer d.stop()
	receiver, other := d.nodes[0], d.nodes[1]
	ids, err := d.profiles(2)
	if err != nil {
		return err
	}
	filler, measured := ids[0], ids[1]
	c := newFleetClient(d.key)
	defer c.close()
	if _, _, err := c.launch(receiver.addr, filler); err != nil {
		return fmt.Errorf("the filler's launch: %w (%s)", err, receiver.proc.tail())
	}
	defer func() { _, _ = c.release(receiver.addr, filler) }()
	receiverBefore, err := placedElsewhere(receiver)
	if err != nil {
		return err
	}
	if receiverBefore != 0 {
		return errors.New("the receiver placed the filler's launch elsewhere: it would not be full")
	}
	otherBefore, err := placedElsewhere(other)
	if err != nil {
		return err
	}
	kinds := []struct {
		via *instance
		out *[]time.Duration
	}{{other, &f.local}, {receiver, &f.remote}}
	fmt.Fprintf(os.Stderr, "fleet: %d launches answered locally and %d placed elsewhere, in turns\n", o.launches, o.launches)
	for i := -1; i < o.launches; i++ {
		for j := range kinds {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := kinds[(max(i, 0)+j)%len(kinds)]
			took, cdpURL, err := c.launch(k.via.addr, measured)
			if err != nil {
				return fmt.Errorf("launch through %s: %w (%s)", k.via.name, err, k.via.proc.tail())
			}
			if i < 0 {
				// The answer works either way: the browser answers
				// through its cdpUrl (the first instance's relay).
				if _, err := browserVersion(ctx, cdpURL); err != nil {
					_, _ = c.release(k.via.addr, measured)
					return fmt.Errorf("the browser launched through %s: %w", k.via.name, err)
				}
			} else {
				*k.out = append(*k.out, took)
			}
			if _, err := c.release(k.via.addr, measured); err != nil {
				return fmt.Errorf("through %s: %w (%s)", k.via.name, err, k.via.proc.tail())
			}
		}
	}
	receiverAfter, err := placedElsewhere(receiver)
	if err != nil {
		return err
	}
	otherAfter, err := placedElsewhere(other)
	if err != nil {
		return err
	}
	f.remotePlaced, f.localPlaced = receiverAfter-receiverBefore, otherAfter-otherBefore
	return nil
}

// measureFleetThroughput starts a deployment of len(maxes) instances and
// runs the closed loop on it: o.clients clients, each launching a profile
// of its own and releasing it again, every request sent to the first
// instance, for o.duration after one warm-up launch and release of each.
func measureFleetThroughput(ctx context.Context, bin, dir, chromiumPath, bwrapPath, key string, vars map[string]string, maxes []int, o fleetOptions) (*fleetThroughput, error) {
	fmt.Fprintf(os.Stderr, "fleet: %d instance(s) of BROWSERS_MAX=%d, %d clients for %v\n", len(maxes), maxes[0], o.clients, o.duration)
	d, err := startFleet(ctx, bin, dir, key, vars, chromiumPath, bwrapPath, maxes)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	first := d.nodes[0]
	ids, err := d.profiles(o.clients)
	if err != nil {
		return nil, err
	}
	clients := make([]*fleetClient, o.clients)
	for i := range clients {
		clients[i] = newFleetClient(d.key)
		defer clients[i].close()
	}
	// Warm-up: every client's first launch and release, together.
	var wg sync.WaitGroup
	warm := make([]error, o.clients)
	for i, c := range clients {
		wg.Go(func() {
			if _, _, err := c.launch(first.addr, ids[i]); err != nil {
				warm[i] = err
				return
			}
			_, warm[i] = c.release(first.addr, ids[i])
		})
	}
	wg.Wait()
	if err := errors.Join(warm...); err != nil {
		return nil, fmt.Errorf("warm-up: %w (%s)", err, first.proc.tail())
	}

	t := &fleetThroughput{instances: len(maxes), browsersMax: maxes[0], window: o.duration}
	placedBefore, err := placedElsewhere(first)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		t.errors++
		if t.firstError == "" {
			t.firstError = err.Error()
		}
	}
	busy0, total0 := machineCPU()
	t0 := time.Now()
	end := t0.Add(o.duration)
	for i, c := range clients {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				took, _, err := c.launch(first.addr, ids[i])
				var refused *launchStatus
				if errors.As(err, &refused) && refused.status == http.StatusServiceUnavailable {
					// The fleet was full: a user retries.
					fail(err)
					continue
				}
				if err != nil {
					// The profile may be left running: this client stops.
					fail(err)
					return
				}
				answered := time.Now()
				rel, err := c.release(first.addr, ids[i])
				mu.Lock()
				t.answered++
				if answered.Before(end) {
					t.launches = append(t.launches, took)
				}
				if err == nil {
					t.releases = append(t.releases, rel)
				}
				mu.Unlock()
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	time.Sleep(time.Until(end))
	busy1, total1 := machineCPU()
	wg.Wait()
	t.cpu = 100 * safeDiv(float64(busy1-busy0), float64(total1-total0))
	placedAfter, err := placedElsewhere(first)
	if err != nil {
		return nil, err
	}
	t.placed = placedAfter - placedBefore
	if len(t.launches) == 0 {
		return nil, fmt.Errorf("no launch answered: %s (%s)", t.firstError, first.proc.tail())
	}
	return t, ctx.Err()
}

// machineCPU reads the machine's busy and total time so far, in clock
// ticks, from the first line of /proc/stat (idle and iowait are not busy).
func machineCPU() (busy, total int64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal; guest time is
	// counted in user already.
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0
		}
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total
}

// fleetSection renders the fleet figures, or why there are none.
func (r *report) fleetSection(p func(format string, args ...any)) {
	if r.fleetSkipped != "" {
		p("\n## Fleet\n\n%s\n", r.fleetSkipped)
		return
	}
	f := r.fleet
	if f == nil {
		return
	}
	o := r.fleetOpts
	p("\n## Fleet\n\nInstances of the service (PostgreSQL, BROWSER_RUNTIME=chromium, each browser headless in its sandbox) sharing one schema per deployment, "+
		"each a process with its own NODE_URL, DATA_DIR and TMPDIR and the first one's address as PUBLIC_URL, beating every %s (FLEET_TIMEOUT %s). "+
		"A launch is POST /launch {\"headless\":true} by API key, timed from the request sent until its 200 has been read (Chromium started, the session with its cdpUrl answered); "+
		"releases are not counted. A launch the receiving instance has no place for goes to the live instance with the most room, through a signed internal call, and its answer is passed back.\n\n",
		fleetHeartbeat, fleetTimeout)
	p("Placement overhead: two instances; the receiver has BROWSERS_MAX=1 and one browser of a filler profile running, the other BROWSERS_MAX=2 and none. "+
		"Local: the launch sent to the other instance, which runs it itself. Remote: the same launch sent to the full receiver, which places it on the other. "+
		"The same profile either way, so the browser starts on the same instance; %d of each after one unmeasured round (whose browsers answered Browser.getVersion through their cdpUrl), "+
		"taking turns, each released through the instance it was sent to before the next.\n\n", len(f.local))
	p("| figure | local | remote | remote − local |\n|---|---|---|---|\n")
	for _, q := range []float64{50, 95} {
		l, rm := pct(f.local, q), pct(f.remote, q)
		p("| launch answered, p%.0f | %.1f ms | %.1f ms | %+.1f ms |\n", q, l, rm, rm-l)
	}
	p("| launches the receiving instance placed elsewhere (its /metrics) | %d of %d | %d of %d | |\n", f.localPlaced, f.perKind, f.remotePlaced, f.perKind)
	p("\nThroughput: a closed loop of %d clients, each launching a profile of its own and releasing it again, every request sent to the first instance "+
		"(as a user without a balancer sends them), for %v after one warm-up launch and release of each. Three instances with BROWSERS_MAX=%d each, "+
		"or one instance with BROWSERS_MAX=%d: the same places, more than the clients, so that places are not the limit and the comparison is of processes on the same CPU. "+
		"Each deployment runs alone, stopped before the next starts. Launches/s: launches answered 200 within the window ÷ its length. "+
		"Placed elsewhere: of the launches answered, those the first instance placed on another (its /metrics). Machine CPU: the busy time of all cores over the window (/proc/stat).\n\n",
		o.clients, o.duration, o.browsers, 3*o.browsers)
	p("| deployment | launches/s | launch p50 | launch p95 | release p50 | placed elsewhere | machine CPU | errors |\n|---|---|---|---|---|---|---|---|\n")
	for _, t := range []*fleetThroughput{f.one, f.three} {
		if t == nil {
			continue
		}
		p("| %d × BROWSERS_MAX=%d | %.2f | %.1f ms | %.1f ms | %.1f ms | %d of %d | %.0f %% | %d |\n", t.instances, t.browsersMax, t.rate(),
			pct(t.launches, 50), pct(t.launches, 95), pct(t.releases, 50), t.placed, t.answered, t.cpu, t.errors)
	}
	if f.one != nil && f.three != nil {
		p("\nThree instances ÷ one: %.2f× the launches a second, %.2f× the launch p50.\n", safeDiv(f.three.rate(), f.one.rate()), safeDiv(pct(f.three.launches, 50), pct(f.one.launches, 50)))
	}
	p("\nThe machine has %d cores, shared by every instance, its browsers, PostgreSQL and the bench: three instances on it add processes, not CPU, so the throughput shows what three instances and their hops cost on one machine, not what three machines would give.\n", runtime.NumCPU())
	for _, t := range []*fleetThroughput{f.one, f.three} {
		if t != nil && t.firstError != "" {
			p("\n%d × BROWSERS_MAX=%d, first error: %s\n", t.instances, t.browsersMax, strings.Join(strings.Fields(t.firstError), " "))
		}
	}
}

// rate is the launches answered a second over the window.
func (t *fleetThroughput) rate() float64 {
	return safeDiv(float64(len(t.launches)), t.window.Seconds())
}
