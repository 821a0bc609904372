//go:build linux

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

// target is one server under one workload: a column of an A/B comparison.
type target struct {
	id       string // "pg/get-key", "limit/read": what the ratios name
	backend  string
	workload string
	server   string
	unit     string
	pid      int // the server's process, whose CPU time is read
	plan     load.Plan
	fig      figure
}

// figure is what the rounds of a target measured: medians across rounds.
type figure struct {
	rate, p50, p99 float64 // per second, milliseconds
	// CPU time of the server and of the load generator over a round, in
	// percent of one core: shows the client stays small next to the server.
	serverCPU, clientCPU float64
	errors               int64
	firstError           string
	ran                  bool
}

// loadOptions shape every comparison alike.
type loadOptions struct {
	conns         int
	warmup, round time.Duration
	rounds        int
}

func steps(addr string, want int, reqs ...load.Request) []load.Step {
	out := make([]load.Step, len(reqs))
	for i, r := range reqs {
		out[i] = load.Step{Raw: load.Build(addr, r), Want: want}
	}
	return out
}

func same(s []load.Step) func(int) []load.Step { return func(int) []load.Step { return s } }

// serviceTargets are the workloads of one running service.
func serviceTargets(in *instance, conns int) map[string]*target {
	key := [][2]string{{"X-API-Key", in.apiKey}}
	get := "/api/v1/profiles/" + in.profiles[len(in.profiles)-1]
	mk := func(workload, server, unit string, script func(int) []load.Step) *target {
		return &target{pid: in.proc.cmd.Process.Pid, backend: in.name, workload: workload, server: server, unit: unit, plan: load.Plan{Addr: in.addr, Conns: conns, Script: script}}
	}
	t := map[string]*target{
		"get-key": mk("GET profile", "service, API key", "req/s", same(steps(in.addr, 200, load.Request{Method: "GET", Path: get, Header: key}))),
		"get-jwt": mk("GET profile", "service, JWT", "req/s", same(steps(in.addr, 200, load.Request{Method: "GET", Path: get, Header: [][2]string{{"Authorization", "Bearer " + in.jwt}}}))),
		"list50":  mk("list of 50", "service, API key", "req/s", same(steps(in.addr, 200, load.Request{Method: "GET", Path: "/api/v1/profiles?limit=50", Header: key}))),
		"create":  mk("create", "service, API key", "req/s", same(steps(in.addr, 201, load.Request{Method: "POST", Path: "/api/v1/profiles", Header: key, Body: []byte(createBody)}))),
		// One profile per connection, so no two connections contend for
		// one lease.
		"launch": mk("launch+release", "service, API key", "pairs/s", func(i int) []load.Step {
			p := "/api/v1/profiles/" + in.profiles[i%len(in.profiles)]
			return steps(in.addr, 200, load.Request{Method: "POST", Path: p + "/launch", Header: key}, load.Request{Method: "POST", Path: p + "/release", Header: key})
		}),
	}
	for name, tg := range t {
		tg.id = in.key + "/" + name
	}
	return t
}

// limitTarget is a limit server under the workload it stands for.
func limitTarget(id, workload, server string, p *proc, want int, r load.Request, conns int) *target {
	addr := p.addr
	return &target{id: id, pid: p.cmd.Process.Pid, backend: "limit", workload: workload, server: server, unit: "req/s",
		plan: load.Plan{Addr: addr, Conns: conns, Script: same(steps(addr, want, r))}}
}

// compare runs the targets in A/B rounds: each warms up once, then every
// round runs each target in turn, starting one further along each round,
// so drift in the machine's load falls on all of them alike.
func compare(title string, targets []*target, o loadOptions) {
	if len(targets) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %d targets, warm-up %v, %d rounds of %v\n", title, len(targets), o.warmup, o.rounds, o.round)
	for _, t := range targets {
		p := t.plan
		p.Duration = o.warmup
		load.Run(p)
	}
	rates := make([][]float64, len(targets))
	p50s := make([][]float64, len(targets))
	p99s := make([][]float64, len(targets))
	srvCPU := make([][]float64, len(targets))
	cliCPU := make([][]float64, len(targets))
	for r := range o.rounds {
		for j := range targets {
			k := (r + j) % len(targets)
			t := targets[k]
			p := t.plan
			p.Duration = o.round
			srv0, _ := cpuOf(t.pid)
			cli0 := selfCPU()
			res := load.Run(p)
			srv1, _ := cpuOf(t.pid)
			cliCPU[k] = append(cliCPU[k], 100*float64(selfCPU()-cli0)/float64(res.Elapsed))
			srvCPU[k] = append(srvCPU[k], 100*float64(srv1-srv0)/float64(res.Elapsed))
			rates[k] = append(rates[k], res.Throughput())
			p50s[k] = append(p50s[k], ms(load.Percentile(res.Latencies, 50)))
			p99s[k] = append(p99s[k], ms(load.Percentile(res.Latencies, 99)))
			t.fig.errors += res.Errors
			if t.fig.firstError == "" {
				t.fig.firstError = res.FirstError
			}
		}
	}
	for k, t := range targets {
		t.fig.rate, t.fig.p50, t.fig.p99, t.fig.ran = load.Median(rates[k]), load.Median(p50s[k]), load.Median(p99s[k]), true
		t.fig.serverCPU, t.fig.clientCPU = load.Median(srvCPU[k]), load.Median(cliCPU[k])
		fmt.Fprintf(os.Stderr, "  %-36s %-14s %-30s %9.0f %s  p50 %6.2f ms  p99 %6.2f ms  cpu %3.0f%%/%3.0f%%  errors %d %s\n",
			t.backend, t.workload, t.server, t.fig.rate, t.unit, t.fig.p50, t.fig.p99, t.fig.serverCPU, t.fig.clientCPU, t.fig.errors, t.fig.firstError)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
