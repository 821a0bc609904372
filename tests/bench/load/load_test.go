package load

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBuildWritesAKeepAliveRequestThatNetHTTPParses(t *testing.T) {
	raw := Build("127.0.0.1:8080", Request{Method: "POST", Path: "/api/v1/profiles?x=1", Header: [][2]string{{"X-API-Key", "k1"}}, Body: []byte(`{"a":1}`)})
	want := "POST /api/v1/profiles?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-API-Key: k1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
	if string(raw) != want {
		t.Fatalf("got %q\nwant %q", raw, want)
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(raw))))
	if err != nil {
		t.Fatal(err)
	}
	if req.Close || req.ContentLength != 7 || req.Header.Get("X-API-Key") != "k1" {
		t.Fatalf("parsed as close=%v length=%d key=%q", req.Close, req.ContentLength, req.Header.Get("X-API-Key"))
	}
}

func TestBuildGivesABodilessPOSTAZeroLength(t *testing.T) {
	raw := string(Build("h", Request{Method: "POST", Path: "/launch"}))
	if !strings.Contains(raw, "Content-Length: 0\r\n") || strings.Contains(raw, "Content-Type") {
		t.Fatalf("got %q", raw)
	}
	if raw := string(Build("h", Request{Method: "GET", Path: "/"})); strings.Contains(raw, "Content-Length") {
		t.Fatalf("a GET states a length: %q", raw)
	}
}

func read(t *testing.T, wire string) (int, string, bool, error) {
	t.Helper()
	status, body, keep, err := readResponse(bufio.NewReader(strings.NewReader(wire)), nil)
	return status, string(body), keep, err
}

func TestReadResponseByContentLength(t *testing.T) {
	status, body, keep, err := read(t, "HTTP/1.1 201 Created\r\ncontent-length: 5\r\nX-Other: y\r\n\r\nhelloNEXT")
	if err != nil || status != 201 || body != "hello" || !keep {
		t.Fatalf("got %d %q keep=%v err=%v", status, body, keep, err)
	}
}

func TestReadResponseChunkedWithExtensionAndTrailer(t *testing.T) {
	wire := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\nA\r\n0123456789\r\n0\r\nX-Trailer: z\r\n\r\n"
	status, body, keep, err := read(t, wire)
	if err != nil || status != 200 || body != "abcd0123456789" || !keep {
		t.Fatalf("got %d %q keep=%v err=%v", status, body, keep, err)
	}
}

func TestReadResponseHonoursConnectionClose(t *testing.T) {
	_, _, keep, err := read(t, "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n")
	if err != nil || keep {
		t.Fatalf("keep=%v err=%v, want a closed connection", keep, err)
	}
	status, body, keep, err := read(t, "HTTP/1.1 200 OK\r\n\r\nto the end")
	if err != nil || status != 200 || body != "to the end" || keep {
		t.Fatalf("got %d %q keep=%v err=%v", status, body, keep, err)
	}
}

func TestReadResponseNoBodyFor204(t *testing.T) {
	status, body, keep, err := read(t, "HTTP/1.1 204 No Content\r\n\r\n")
	if err != nil || status != 204 || body != "" || !keep {
		t.Fatalf("got %d %q keep=%v err=%v", status, body, keep, err)
	}
}

func TestReadResponseRejectsMalformedInput(t *testing.T) {
	for _, wire := range []string{
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"SMTP 220 hello\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	} {
		if _, _, keep, err := read(t, wire); err == nil || keep {
			t.Errorf("%q: keep=%v err=%v, want an error and a closed connection", wire, keep, err)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{50, 100 * time.Millisecond}, {99, 198 * time.Millisecond}, {100, 200 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(d, c.q); got != c.want {
			t.Errorf("p%v = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestMedianOddEvenAndUnsortedInput(t *testing.T) {
	xs := []float64{9, 1, 5}
	if got := Median(xs); got != 5 {
		t.Errorf("median = %v, want 5", got)
	}
	if xs[0] != 9 {
		t.Errorf("Median sorted its input: %v", xs)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median = %v, want 2.5", got)
	}
}

func TestRunStopsAfterTotalAndCountsWrongStatuses(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 5000))) // chunked: over net/http's buffer
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ok := Build(addr, Request{Method: "GET", Path: "/ok"})
	res := Run(Plan{Addr: addr, Conns: 4, Total: 100, Script: func(int) []Step { return []Step{{Raw: ok, Want: 200}, {Raw: ok, Want: 200}} }})
	if res.Iterations != 100 || res.Errors != 0 || len(res.Latencies) != 100 || served.Load() != 200 {
		t.Fatalf("iterations %d errors %d (%s) latencies %d served %d, want 100, 0, 100, 200", res.Iterations, res.Errors, res.FirstError, len(res.Latencies), served.Load())
	}
	if res.Latencies[0] > res.Latencies[99] {
		t.Fatal("latencies not sorted")
	}

	missing := Build(addr, Request{Method: "GET", Path: "/missing"})
	res = Run(Plan{Addr: addr, Conns: 2, Total: 10, Script: func(int) []Step { return []Step{{Raw: missing, Want: 200}} }})
	if res.Iterations != 0 || res.Errors != 10 || !strings.Contains(res.FirstError, "status 404") {
		t.Fatalf("iterations %d errors %d first %q, want 0, 10, a 404", res.Iterations, res.Errors, res.FirstError)
	}
}

func TestRunGivesEachConnectionItsScript(t *testing.T) {
	var seen [3]atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen[r.URL.Path[1]-'0'].Add(1)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	res := Run(Plan{Addr: addr, Conns: 3, Duration: 50 * time.Millisecond, Script: func(i int) []Step {
		return []Step{{Raw: Build(addr, Request{Method: "GET", Path: "/" + string(rune('0'+i))}), Want: 200}}
	}})
	if res.Errors != 0 {
		t.Fatal(res.FirstError)
	}
	for i := range seen {
		if seen[i].Load() == 0 {
			t.Errorf("connection %d's path never requested", i)
		}
	}
}

// An open-loop run sends each request that falls due exactly once, in the
// plan's order of steps, and counts a wrong status as an error rather than
// a latency.
func TestRunOpenSendsEachDueRequestOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/7" {
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	res := RunOpen(OpenPlan{Addr: addr, Rate: 2000, Duration: 50 * time.Millisecond, Conns: 4, Step: func(n int64) Step {
		return Step{Raw: Build(addr, Request{Method: "GET", Path: "/" + strconv.FormatInt(n, 10)}), Want: http.StatusOK}
	}})
	if res.Due != 100 || res.Errors != 1 || len(res.Latencies) != 99 || !strings.Contains(res.FirstError, "status 418") {
		t.Fatalf("due %d, errors %d (%q), %d latencies; want 100, 1 (the teapot), 99", res.Due, res.Errors, res.FirstError, len(res.Latencies))
	}
	for n := range 100 {
		if c := seen["/"+strconv.Itoa(n)]; c != 1 {
			t.Fatalf("request %d sent %d times", n, c)
		}
	}
}
