package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestWebhooksSurviveAKilledInstance runs two service processes on one
// PostgreSQL database, creates 2,000 profiles through both, and kill -9s
// one of them halfway. Every profile.created event must still reach the
// receiver, duplicates only by event id: the killed instance's leases
// lapse and the other instance delivers. A request the killed instance
// had in flight counts as not delivered (the receiver never answered it).
func TestWebhooksSurviveAKilledInstance(t *testing.T) {
	dbURL := testenv.PostgresURL(t)

	// The receiver holds every request until the kill, so the doomed
	// instance dies with leased deliveries in flight: only lease expiry
	// gets them delivered.
	gate := make(chan struct{})
	var gateOnce sync.Once
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(openGate)
	var mu sync.Mutex
	seen := map[string]int{}           // event id -> deliveries
	profileEvents := map[string]bool{} // profile id -> its created event arrived
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Profile struct {
					ID string `json:"id"`
				} `json:"profile"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &p) != nil || r.Header.Get("X-Service-Event-Id") != p.ID {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[p.ID]++
		mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return // the sender is gone: not delivered
		}
		mu.Lock()
		if p.Type == "profile.created" {
			profileEvents[p.Data.Profile.ID] = true
		}
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)

	env := func(addr string) []string {
		return minimalEnv("HTTP_ADDR="+addr, "DATA_DIR="+t.TempDir(), "DATABASE_URL="+dbURL,
			"JWT_SECRET=e2e-jwt-secret-0123456789abcdef0123456789", "SECRET_KEY=e2e-secret-key-0123456789abcdef0123456789",
			"ALLOW_PRIVATE_TARGETS=true", "LOG_LEVEL=warn")
	}
	start := func() *process {
		addr := freeAddr(t)
		return startProcess(t, t.TempDir(), env(addr), addr)
	}
	survivor, doomed := start(), start()
	base := func(p *process) string { return "http://" + p.addr }

	var reg struct {
		AccessToken string `json:"accessToken"`
	}
	if status, err := post(base(survivor), "/api/v1/auth/register", "", map[string]any{"email": "hooks@example.com", "password": "two instances", "name": "Hooks"}, &reg); err != nil || status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, err)
	}
	if status, err := post(base(survivor), "/v1/webhooks", reg.AccessToken, map[string]any{"url": receiver.URL, "events": []string{"profile.created"}, "secret": "e2e-webhook-secret-0123456789abcdef"}, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, err)
	}

	const n = 2000
	var created sync.Map // profile id -> true, for every 201
	var next atomic.Int64
	var killed atomic.Bool
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > n {
					return
				}
				target := survivor
				if w%2 == 1 && !killed.Load() {
					target = doomed
				}
				var p struct {
					ID string `json:"id"`
				}
				status, err := post(base(target), "/api/v1/profiles", reg.AccessToken, map[string]any{"name": fmt.Sprintf("p%d", i), "templateId": "tpl_chrome_win_us", "proxy": nil}, &p)
				if err == nil && status == http.StatusCreated {
					created.Store(p.ID, true)
				}
			}
		})
	}
	// Kill one instance halfway, with deliveries in flight and leased.
	for next.Load() < n/2 {
		time.Sleep(time.Millisecond) // watching the load generator's progress; bounded by n
	}
	if err := doomed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	<-doomed.done
	openGate()
	wg.Wait()

	var want []string
	created.Range(func(k, _ any) bool { want = append(want, k.(string)); return true })
	if len(want) < n*9/10 {
		t.Fatalf("only %d of %d profiles were created", len(want), n)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		missing := 0
		for _, id := range want {
			if !profileEvents[id] {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d created profiles never reached the receiver", missing, len(want))
		}
		time.Sleep(50 * time.Millisecond) // waiting for deliveries; bounded by the deadline
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d profiles created, %d distinct events delivered, %d deliveries repeated (same id)", len(want), len(seen), dups)
	if dups == 0 {
		t.Fatal("nothing was delivered twice: the killed instance held no lease, so the test did not exercise the takeover")
	}
}

// post sends a JSON body and decodes the data of the answer.
func post(base, path, token string, body any, out any) (int, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			return resp.StatusCode, err
		}
		if err := json.Unmarshal(env.Data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode data: %w", err)
		}
	}
	return resp.StatusCode, nil
}
