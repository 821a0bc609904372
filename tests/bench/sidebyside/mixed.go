//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

// mixedOptions shape the open-loop comparison of the service as it was at
// a revision with this tree, on PostgreSQL + Redis.
type mixedOptions struct {
	before string // git revision; "" skips the comparison
	rates  []float64
	round  time.Duration
	rounds int
	conns  int // requests in flight at most, per server
}

// mixedFigure is one server at one rate: medians across rounds, and each
// round's p99 to show the spread.
type mixedFigure struct {
	server     string
	rate       float64 // due per second; 0 for the closed-loop saturation run
	achieved   float64 // answered per second
	p50, p99   float64
	roundP99s  []float64
	errors     int64
	firstError string
}

// mixedFigures is the comparison's outcome, for the report.
type mixedFigures struct {
	opts    mixedOptions
	before  string
	figures []*mixedFigure
}

// The mix, by a request's number modulo 10: 6 GETs of a profile, 2 lists of
// 50, 1 create and 1 PATCH.
const mixedCycle = 10

// mixedRequests are the mix's requests to in, built once: a GET and a
// PATCH per seeded profile, the list and the create.
type mixedRequests struct {
	gets, patches []load.Step
	list, create  load.Step
}

func newMixedRequests(in *instance) mixedRequests {
	key := [][2]string{{"X-API-Key", in.apiKey}}
	m := mixedRequests{
		list:   steps(in.addr, 200, load.Request{Method: "GET", Path: "/api/v1/profiles?limit=50", Header: key})[0],
		create: steps(in.addr, 201, load.Request{Method: "POST", Path: "/api/v1/profiles", Header: key, Body: []byte(createBody)})[0],
	}
	for _, id := range in.profiles {
		path := "/api/v1/profiles/" + id
		m.gets = append(m.gets, steps(in.addr, 200, load.Request{Method: "GET", Path: path, Header: key})[0])
		m.patches = append(m.patches, steps(in.addr, 200, load.Request{Method: "PATCH", Path: path, Header: key, Body: []byte(`{"notes":"mixed load"}`)})[0])
	}
	return m
}

// step is request n of the mix; GETs and PATCHes go round the profiles.
func (m mixedRequests) step(n int64) load.Step {
	p := int(n/mixedCycle) % len(m.gets)
	switch n % mixedCycle {
	case 6, 7:
		return m.list
	case 8:
		return m.create
	case 9:
		return m.patches[p]
	}
	return m.gets[(p+int(n%mixedCycle))%len(m.gets)]
}

// cycle is one closed-loop iteration of the mix, for connection i.
func (m mixedRequests) cycle(i int) []load.Step {
	out := make([]load.Step, mixedCycle)
	for k := range out {
		out[k] = m.step(int64(i*mixedCycle + k))
	}
	return out
}

// measureMixed starts the service built at o.before and this tree's, each
// on a fresh schema with Redis, and loads them in turns: at each rate,
// rounds of the open-loop mix, the two taking turns and swapping who goes
// first each round; then the closed-loop mix at o.conns connections for
// the throughput at saturation.
func measureMixed(ctx context.Context, beforeBin, svcBin, dir string, vars func(key string) (map[string]string, error), profiles int, o mixedOptions) (*mixedFigures, error) {
	out := &mixedFigures{opts: o, before: o.before}
	var servers []*instance
	for _, s := range []struct{ key, name, bin string }{
		{"mixedbefore", "before (" + o.before + ")", beforeBin},
		{"mixednow", "this tree", svcBin},
	} {
		b := backend{key: s.key, name: s.name, env: map[string]string{"DATABASE_URL": "{postgres}", "REDIS_URL": "{redis}"}}
		v, err := vars(s.key)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "starting %s for the mixed load\n", s.name)
		in, err := launch(ctx, s.bin, dir, b, v, 0)
		if err != nil {
			return nil, err
		}
		defer func() { in.proc.stop() }()
		if err := in.seed(profiles); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		if err := analyze(ctx, v["postgres"]); err != nil {
			return nil, fmt.Errorf("%s: analyze: %w", s.name, err)
		}
		servers = append(servers, in)
	}
	reqs := make([]mixedRequests, len(servers))
	for i, in := range servers {
		reqs[i] = newMixedRequests(in)
		// A short warm-up at the lowest rate.
		load.RunOpen(load.OpenPlan{Addr: in.addr, Rate: o.rates[0], Duration: time.Second, Conns: o.conns, Step: reqs[i].step})
	}
	for _, rate := range o.rates {
		figs := make([]*mixedFigure, len(servers))
		p50s := make([][]float64, len(servers))
		for i, in := range servers {
			figs[i] = &mixedFigure{server: in.name, rate: rate}
		}
		fmt.Fprintf(os.Stderr, "mixed load at %.0f req/s: %d rounds of %v\n", rate, o.rounds, o.round)
		for r := range o.rounds {
			for j := range servers {
				k := (r + j) % len(servers)
				res := load.RunOpen(load.OpenPlan{Addr: servers[k].addr, Rate: rate, Duration: o.round, Conns: o.conns, Step: reqs[k].step})
				f := figs[k]
				f.achieved += float64(len(res.Latencies)) / res.Elapsed.Seconds() / float64(o.rounds)
				p50s[k] = append(p50s[k], ms(load.Percentile(res.Latencies, 50)))
				f.roundP99s = append(f.roundP99s, ms(load.Percentile(res.Latencies, 99)))
				f.errors += res.Errors
				if f.firstError == "" {
					f.firstError = res.FirstError
				}
			}
		}
		for k, f := range figs {
			f.p50, f.p99 = load.Median(p50s[k]), load.Median(f.roundP99s)
		}
		out.figures = append(out.figures, figs...)
	}
	fmt.Fprintf(os.Stderr, "mixed load, closed loop at %d connections: %d rounds of %v\n", o.conns, o.rounds, o.round)
	sat := make([][]float64, len(servers))
	for r := range o.rounds {
		for j := range servers {
			k := (r + j) % len(servers)
			res := load.Run(load.Plan{Addr: servers[k].addr, Conns: o.conns, Script: reqs[k].cycle, Duration: o.round})
			sat[k] = append(sat[k], res.Throughput()*mixedCycle)
		}
	}
	for k, in := range servers {
		out.figures = append(out.figures, &mixedFigure{server: in.name, achieved: load.Median(sat[k])})
	}
	return out, nil
}

// section writes the mixed load's table.
func (m *mixedFigures) section(p func(string, ...any)) {
	p("\n## Mixed load, open loop (PostgreSQL + Redis)\n\n"+
		"The service at `%s` and this tree, each on a fresh schema with Redis and the same seeded profiles, under the same mix: of every 10 requests, 6 GETs of a profile, 2 lists of 50, 1 create and 1 PATCH. "+
		"Open loop: requests fall due at a fixed rate whatever the server does, at most %d in flight, and latency counts from when each was due. "+
		"At each rate %d rounds of %v, the two taking turns; p50 and p99 are medians of the rounds, every round's p99 is listed. "+
		"Saturation: the same mix in a closed loop at %d connections, requests answered per second (median of the rounds).\n\n",
		m.before, m.opts.conns, m.opts.rounds, m.opts.round, m.opts.conns)
	p("| server | due req/s | answered req/s | p50 ms | p99 ms | p99 of each round | errors |\n|---|---|---|---|---|---|---|\n")
	for _, f := range m.figures {
		if f.rate == 0 {
			continue
		}
		p("| %s | %.0f | %.0f | %.2f | %.2f | %s | %d |\n", f.server, f.rate, f.achieved, f.p50, f.p99, joinMS(f.roundP99s), f.errors)
	}
	// The goal: this tree's p99 within 15 % of the revision's at each rate
	// (figures[2i] is the revision, figures[2i+1] this tree).
	p("\n| due req/s | p99, this tree ÷ before | goal | met |\n|---|---|---|---|\n")
	for i := 0; i+1 < len(m.figures); i += 2 {
		before, now := m.figures[i], m.figures[i+1]
		if before.rate == 0 || before.p99 == 0 {
			continue
		}
		x := now.p99 / before.p99
		p("| %.0f | %.2f (%.2f vs %.2f ms) | ≤ 1.15 | %s |\n", before.rate, x, now.p99, before.p99, verdict(x <= 1.15))
	}
	p("\n| server | saturation, closed loop |\n|---|---|\n")
	for _, f := range m.figures {
		if f.rate == 0 {
			p("| %s | %.0f req/s |\n", f.server, f.achieved)
		}
	}
	for _, f := range m.figures {
		if f.firstError != "" {
			p("\n%s at %.0f req/s, first error: %s\n", f.server, f.rate, f.firstError)
		}
	}
}

func joinMS(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ")
}
