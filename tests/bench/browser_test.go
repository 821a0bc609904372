//go:build linux

package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/profilesvc/profilesvc/adapters/browser/chromium"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

const (
	// browserLaunches is how many launches the latency percentiles come
	// from at least; a larger b.N (-benchtime=Nx) makes more, up to
	// maxBrowserLaunches.
	browserLaunches    = 20
	maxBrowserLaunches = 200
	// browsersAtOnce is how many browsers run together while their
	// memory is measured.
	browsersAtOnce = 4
)

// BenchmarkBrowser runs profilesvc as a process of its own with Chromium
// and measures what a client of a browser session sees and what a running
// browser costs the machine:
//
//   - launch-p50-ms, launch-p95-ms: from sending POST /launch to the answer
//     to Browser.getVersion sent through the session's cdpUrl, a new
//     connection to the relay each time;
//   - release-p50-ms: POST /release, which closes the browser and stores
//     its data;
//   - rss-per-browser-MB: with browsersAtOnce headless browsers running as
//     launched (one blank tab each), the resident memory of every process
//     below the service (each browser's sandbox and what runs in it)
//     summed, per browser. Pages the processes share (Chromium's code)
//     count once in each process, so pss-per-browser-MB, which shares them
//     out, is the closer figure for what one more browser takes;
//   - service-rss-growth-MB: how far the service's own resident memory
//     grew with those browsers running.
//
// The launches take turns over browsersAtOnce profiles, so that most start
// from the data their previous release stored.
func BenchmarkBrowser(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the browsers' resident memory is read from /proc, which only Linux has")
	}
	path, ok := chromium.Find(os.Getenv("CHROMIUM_PATH"))
	if !ok {
		b.Skip("Chromium is not installed: apt-get install chromium (or set CHROMIUM_PATH) to measure browsers")
	}
	p := startServiceProcess(b, "BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+path, "BROWSERS_MAX=8", "ALLOW_PRIVATE_TARGETS=true")
	profiles := make([]string, browsersAtOnce)
	for i := range profiles {
		var created idOnly
		p.call(b, http.MethodPost, "/api/v1/profiles", map[string]any{"name": fmt.Sprintf("bench browser %d", i), "templateId": "tpl_chrome_win_us", "proxy": nil}, http.StatusCreated, &created)
		profiles[i] = created.Data.ID
	}

	launches := min(max(b.N, browserLaunches), maxBrowserLaunches)
	var ready, released []time.Duration
	var product string
	var stored dataStored
	for i := range launches {
		id := profiles[i%len(profiles)]
		start := time.Now()
		sess := p.launchHeadless(b, id)
		var conn *websocket.Conn
		conn, product = cdpVersion(b, sess.CDPURL)
		ready = append(ready, time.Since(start))
		conn.Close()
		start = time.Now()
		var profile struct {
			Data struct {
				Data dataStored `json:"data"`
			} `json:"data"`
		}
		p.call(b, http.MethodPost, "/api/v1/profiles/"+id+"/release", nil, http.StatusOK, &profile)
		released = append(released, time.Since(start))
		stored = profile.Data.Data
	}

	serviceBefore, err := procStatus(p.pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	// Each browser keeps a client connected through the relay while the
	// memory is read, as a client using its session does.
	sessions := make([]string, len(profiles))
	for i, id := range profiles {
		sess := p.launchHeadless(b, id)
		conn, _ := cdpVersion(b, sess.CDPURL)
		b.Cleanup(func() { conn.Close() })
		sessions[i] = sess.ID
	}
	serviceWith, err := procStatus(p.pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	browsers, sandboxes := browserMemory(b, p.pid)
	if sandboxes != len(sessions) {
		b.Fatalf("%d sandboxes run below the service, want one per session (%d)", sandboxes, len(sessions))
	}
	for _, id := range profiles {
		p.call(b, http.MethodPost, "/api/v1/profiles/"+id+"/release", nil, http.StatusOK, nil)
	}

	launchP50, launchP95, releaseP50 := percentileMs(ready, 50), percentileMs(ready, 95), percentileMs(released, 50)
	perBrowserRSS, perBrowserPSS := mb(browsers.rss)/browsersAtOnce, mb(browsers.pss)/browsersAtOnce
	growth := mb(serviceWith - serviceBefore)
	b.Logf("%s, %d launches: launch → CDP ready p50 %.0f ms, p95 %.0f ms; release p50 %.0f ms, p95 %.0f ms (the last stored %.1f MB of browser data)",
		product, launches, launchP50, launchP95, releaseP50, percentileMs(released, 95), mb(stored.SizeBytes))
	b.Logf("%d browsers running (%d processes): RSS %.1f MB, PSS %.1f MB per browser; service RSS %.1f MB → %.1f MB (%+.1f MB)",
		browsersAtOnce, browsers.processes, perBrowserRSS, perBrowserPSS, mb(serviceBefore), mb(serviceWith), growth)
	// The time per iteration says nothing here: one iteration is the whole
	// run of launches.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(launchP50, "launch-p50-ms")
	b.ReportMetric(launchP95, "launch-p95-ms")
	b.ReportMetric(releaseP50, "release-p50-ms")
	b.ReportMetric(perBrowserRSS, "rss-per-browser-MB")
	b.ReportMetric(perBrowserPSS, "pss-per-browser-MB")
	b.ReportMetric(growth, "service-rss-growth-MB")
}

// browserSession is the part of a launch's answer a CDP client uses.
type browserSession struct {
	ID     string `json:"id"`
	CDPURL string `json:"cdpUrl"`
}

// launchHeadless launches the profile id in a headless browser; the
// service answers once the browser accepts CDP.
func (p *serviceProcess) launchHeadless(b *testing.B, id string) browserSession {
	b.Helper()
	var out struct {
		Data struct {
			Session browserSession `json:"session"`
		} `json:"data"`
	}
	p.call(b, http.MethodPost, "/api/v1/profiles/"+id+"/launch", map[string]any{"headless": true}, http.StatusOK, &out)
	if out.Data.Session.ID == "" || out.Data.Session.CDPURL == "" {
		b.Fatalf("launch of %s answered no session id or cdpUrl: %+v", id, out.Data.Session)
	}
	return out.Data.Session
}

// cdpVersion connects to cdpURL, asks Browser.getVersion and returns the
// connection, which the caller closes, and the browser's product name
// from the answer.
func cdpVersion(b *testing.B, cdpURL string) (*websocket.Conn, string) {
	b.Helper()
	u, err := url.Parse(cdpURL)
	if err != nil {
		b.Fatal(err)
	}
	// x/net/websocket always sends an Origin; the relay takes the
	// service's own.
	cfg, err := websocket.NewConfig(cdpURL, "http://"+u.Host+"/")
	if err != nil {
		b.Fatal(err)
	}
	conn, err := websocket.DialConfig(cfg)
	if err != nil {
		b.Fatalf("dial %s: %v", cdpURL, err)
	}
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		b.Fatal(err)
	}
	if err := websocket.JSON.Send(conn, map[string]any{"id": 1, "method": "Browser.getVersion"}); err != nil {
		conn.Close()
		b.Fatalf("Browser.getVersion: %v", err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Error  json.RawMessage `json:"error"`
			Result struct {
				Product string `json:"product"`
			} `json:"result"`
		}
		if err := websocket.JSON.Receive(conn, &msg); err != nil {
			conn.Close()
			b.Fatalf("Browser.getVersion: %v", err)
		}
		if msg.ID != 1 {
			continue
		}
		if msg.Error != nil || msg.Result.Product == "" {
			conn.Close()
			b.Fatalf("Browser.getVersion answered error %s, product %q", msg.Error, msg.Result.Product)
		}
		// Without a deadline, the connection stays open as long as the
		// caller needs it.
		if err := conn.SetDeadline(time.Time{}); err != nil {
			conn.Close()
			b.Fatal(err)
		}
		return conn, msg.Result.Product
	}
}

// processMemory is the memory of a set of processes, summed.
type processMemory struct {
	processes int
	rss, pss  int64
}

// browserMemory sums the memory of every process below the service's:
// its browsers, each in a sandbox of its own, which is the service's
// child. The browser sees its profile at /profile, so its command line no
// longer says which session it runs; its place in the process tree does.
// It also returns how many sandboxes there are.
func browserMemory(b *testing.B, servicePID int) (processMemory, int) {
	b.Helper()
	below := testenv.Descendants(servicePID)
	sandboxes := 0
	for _, pid := range below {
		if ppid, err := parentPID(pid); err == nil && ppid == servicePID {
			sandboxes++
		}
	}
	var m processMemory
	for _, pid := range below {
		rss, err := procStatus(pid, "VmRSS")
		if err != nil {
			continue
		}
		pss, err := procMemory(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
		if err != nil {
			continue
		}
		m.processes++
		m.rss += rss
		m.pss += pss
	}
	if m.processes == 0 {
		b.Fatalf("no process runs below the service (pid %d)", servicePID)
	}
	return m, sandboxes
}

// parentPID reads the parent's pid from /proc/PID/stat, whose second field,
// the command name in parentheses, may itself hold spaces and parentheses.
func parentPID(pid int) (int, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	return strconv.Atoi(fields[1])
}

// percentileMs is the q-th percentile of ds in milliseconds, by the
// nearest-rank method: the smallest value that q percent of ds are at most.
func percentileMs(ds []time.Duration, q float64) float64 {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(math.Ceil(q / 100 * float64(len(sorted))))
	return float64(sorted[max(rank, 1)-1]) / float64(time.Millisecond)
}
