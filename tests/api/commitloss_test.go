package api_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// commitCut is how a commitProxy cuts a create's connection at its COMMIT.
type commitCut int

const (
	// answerLost forwards the COMMIT, lets PostgreSQL answer it and drops
	// the answer: the create committed, and the service cannot tell.
	answerLost commitCut = iota
	// neverArrives drops the COMMIT: the create did not commit, and the
	// service cannot tell either.
	neverArrives
)

// commitProxy is a TCP proxy between the service and PostgreSQL that reads
// the wire protocol the service sends. Armed, it cuts the connection of
// the next COMMITs of transactions that inserted a profile.
type commitProxy struct {
	t      *testing.T
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   commitCut
	armed int // COMMITs of creates still to cut
	cuts  int // COMMITs of creates cut
	seen  []string
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startCommitProxy(t *testing.T, target string) *commitProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitProxy{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// arm makes the proxy cut the next n COMMITs of creates, by cut.
func (p *commitProxy) arm(cut commitCut, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.armed, p.cuts = cut, n, 0
}

// done says how many COMMITs of creates were cut since arm.
func (p *commitProxy) done() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// commits are the COMMIT statements the proxy saw, as the service sent them.
func (p *commitProxy) commits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *commitProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *commitProxy) serve(client net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client) || !p.track(up) {
		_ = client.Close()
		_ = up.Close()
		return
	}
	var (
		mu       sync.Mutex
		swallow  bool // drop what PostgreSQL answers, then cut
		cutBoth  = sync.OnceFunc(func() { _ = client.Close(); _ = up.Close() })
		answered = make(chan struct{})
	)
	defer cutBoth()
	go func() { // PostgreSQL to the service
		defer close(answered)
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			mu.Lock()
			drop := swallow
			mu.Unlock()
			if n > 0 && drop {
				// The answer to the COMMIT: the create has committed.
				cutBoth()
				return
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				cutBoth()
				return
			}
		}
	}()
	// The service to PostgreSQL, message by message: the startup message
	// (no type byte), then a type byte and a length that counts itself.
	var head [4]byte
	if _, err := io.ReadFull(client, head[:]); err != nil {
		return
	}
	startup := make([]byte, binary.BigEndian.Uint32(head[:])-4)
	if _, err := io.ReadFull(client, startup); err != nil {
		return
	}
	if _, err := up.Write(append(head[:], startup...)); err != nil {
		return
	}
	inserted := false // the open transaction inserted a profile
	for {
		var h [5]byte
		if _, err := io.ReadFull(client, h[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(h[1:])-4)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		sql := ""
		switch h[0] {
		case 'Q': // simple query: the text, NUL-terminated
			sql, _, _ = strings.Cut(string(body), "\x00")
		case 'P': // Parse: the statement's name, then its text
			_, rest, _ := strings.Cut(string(body), "\x00")
			sql, _, _ = strings.Cut(rest, "\x00")
		}
		upper := strings.ToUpper(strings.TrimSpace(sql))
		if strings.HasPrefix(upper, `INSERT INTO "PROFILES"`) {
			inserted = true
		}
		if upper == "COMMIT" {
			p.mu.Lock()
			p.seen = append(p.seen, fmt.Sprintf("%c %q", h[0], sql))
			cut := inserted && p.armed > 0
			if cut {
				p.armed--
				p.cuts++
			}
			how := p.cut
			p.mu.Unlock()
			inserted = false
			if cut && how == neverArrives {
				return
			}
			if cut {
				mu.Lock()
				swallow = true
				mu.Unlock()
				if _, err := up.Write(append(h[:], body...)); err != nil {
					return
				}
				<-answered
				return
			}
		}
		if upper == "ROLLBACK" {
			inserted = false
		}
		if _, err := up.Write(append(h[:], body...)); err != nil {
			return
		}
	}
}

// A create whose COMMIT is cut answers exactly what happened, as creates
// without a unit of work did through the pipelined batcher: 201 when it
// committed, a 5xx when it did not, never 409 for its own row; a retry
// with its Idempotency-Key answers the first create's profile, or creates
// it once; and the team ends with one profile per key.
func TestCreatesWhoseCommitIsCutAnswerWhatHappened(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startCommitProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	h := start(t, options{databaseURL: u.String()})
	a := h.register(t)
	key := h.apiKey(t, a)

	const concurrent, cut = 8, 3
	for _, variant := range []struct {
		name string
		cut  commitCut
	}{{"answer lost", answerLost}, {"never arrives", neverArrives}} {
		t.Run(variant.name, func(t *testing.T) {
			type result struct {
				name, idemKey string
				status        int
				id            string
			}
			results := make([]result, 2*concurrent)
			proxy.arm(variant.cut, cut)
			var wg sync.WaitGroup
			for i := range results {
				r := &results[i]
				r.name = fmt.Sprintf("%s %d", variant.name, i)
				if i%2 == 0 { // half with a key (then in a unit), half alone
					r.idemKey = fmt.Sprintf("%s-%d", strings.ReplaceAll(variant.name, " ", "-"), i)
				}
				wg.Go(func() { r.status, r.id = createAs(h, key, r.name, r.idemKey) })
			}
			wg.Wait()
			if n := proxy.done(); n != cut {
				t.Fatalf("the proxy cut %d COMMITs of creates, want %d; COMMITs seen: %v", n, cut, proxy.commits())
			}
			failed := 0
			for _, r := range results {
				switch {
				case r.status == http.StatusCreated && r.id != "":
				case r.status >= 500 && r.status < 600:
					failed++
				default:
					t.Fatalf("create %q answered %d, want 201 or a 5xx", r.name, r.status)
				}
			}
			if variant.cut == neverArrives && failed != cut {
				t.Fatalf("%d creates failed, want the %d whose COMMIT never arrived", failed, cut)
			}
			if variant.cut == answerLost && failed != 0 {
				t.Fatalf("%d creates failed, want none: each cut COMMIT committed", failed)
			}
			// A retry with the key answers the profile the first create
			// made, or makes it.
			for i := range results {
				r := &results[i]
				if r.idemKey == "" {
					continue
				}
				status, id := createAs(h, key, r.name, r.idemKey)
				if status != http.StatusCreated || (r.status == http.StatusCreated && id != r.id) {
					t.Fatalf("retry of %q (first %d, %s) answered %d, %s", r.name, r.status, r.id, status, id)
				}
				r.status, r.id = status, id
			}
			// The team holds a profile for each create that answered 201,
			// with the id it answered, and none for the others.
			stored := map[string][]string{}
			list := h.get("/api/v1/profiles?limit=100", "X-API-Key", key)
			expect(t, list, http.StatusOK)
			for _, p := range asList(list.env["data"]) {
				m, _ := p.(map[string]any)
				stored[str(m["name"])] = append(stored[str(m["name"])], str(m["id"]))
			}
			for _, r := range results {
				want := []string(nil)
				if r.status == http.StatusCreated {
					want = []string{r.id}
				}
				if fmt.Sprint(stored[r.name]) != fmt.Sprint(want) {
					t.Fatalf("profiles named %q: %v, want %v", r.name, stored[r.name], want)
				}
			}
		})
	}
	for _, c := range proxy.commits() {
		if c != `Q "commit"` && c != `Q "COMMIT"` {
			t.Fatalf("the service sent COMMIT as %s, not as a simple query", c)
		}
	}
}

// createAs creates a profile named name with the API key, with the
// Idempotency-Key idemKey unless it is "", from any goroutine, and returns
// the status and the profile's id.
func createAs(h *harness, apiKey, name, idemKey string) (int, string) {
	body := fmt.Sprintf(`{"name":%q,"templateId":%q}`, name, windowsTemplate)
	r, err := http.NewRequest(http.MethodPost, h.base+"/api/v1/profiles", bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, err.Error()
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-API-Key", apiKey)
	if idemKey != "" {
		r.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := h.client.Do(r)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(raw, &out); err != nil {
			return 0, err.Error()
		}
	}
	return resp.StatusCode, out.Data.ID
}
