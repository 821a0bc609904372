//go:build unix

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/testenv"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// TestWebhooksSurviveAKilledInstance runs two service processes on one
// PostgreSQL database, creates 2,000 profiles through both, and kill -9s
// one of them halfway, while it holds leased deliveries whose requests the
// receiver has in hand. Every committed profile.created event must still
// reach the receiver, duplicates only by event id: the killed instance's
// leases lapse and the other instance delivers.
//
// The receiver never answers the doomed instance: it asks the database
// which dispatcher leases the delivery of each request and holds the
// doomed one's until the connection closes. So a request of the doomed
// instance is never delivered, whenever it is killed, and every event it
// had in flight can only arrive again, with the same id, from the survivor.
// Each arrival of an event carries a higher X-Service-Delivery-Attempt than
// the one before: the attempt the killed instance never recorded counts.
func TestWebhooksSurviveAKilledInstance(t *testing.T) {
	dbURL := testenv.PostgresURL(t)
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	var doomedOwner atomic.Pointer[string]
	var mu sync.Mutex
	arrivals := map[string]int{}        // event id -> requests that arrived
	delivered := map[string]bool{}      // event id -> answered 200
	profileOwner := map[string]string{} // profile id -> lease owner of its answered created event
	held := map[string]int{}            // event id -> requests of the doomed instance held now
	attempts := map[string][]int{}      // event id -> X-Service-Delivery-Attempt of each arrival
	var lookupFailures atomic.Int64
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
		attempt, _ := strconv.Atoi(r.Header.Get("X-Service-Delivery-Attempt"))
		mu.Lock()
		arrivals[p.ID]++
		attempts[p.ID] = append(attempts[p.ID], attempt)
		mu.Unlock()
		// A dispatcher holds the lease for as long as its attempt runs, so
		// the lease owner names the sender. Not the request's context: a
		// sender killed meanwhile must still be recognised, not answered.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var owner string
		err := db.QueryRowContext(ctx, `SELECT lease_owner FROM webhook_deliveries WHERE event_id = $1 AND status = 'pending' AND lease_owner IS NOT NULL`, p.ID).Scan(&owner)
		if err != nil {
			// No lease (its sender timed out before the question was
			// answered) or no answer from the database: a 503 makes it a
			// retry, never a delivery nobody can attribute.
			lookupFailures.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if o := doomedOwner.Load(); o != nil && owner == *o {
			mu.Lock()
			held[p.ID]++
			mu.Unlock()
			<-r.Context().Done() // the sender timed out or was killed: not delivered
			mu.Lock()
			if held[p.ID]--; held[p.ID] == 0 {
				delete(held, p.ID)
			}
			mu.Unlock()
			return
		}
		mu.Lock()
		delivered[p.ID] = true
		if p.Type == "profile.created" {
			profileOwner[p.Data.Profile.ID] = owner
		}
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)

	env := func(addr string) []string {
		return minimalEnv("HTTP_ADDR="+addr, "DATA_DIR="+t.TempDir(), "DATABASE_URL="+dbURL,
			"JWT_SECRET=e2e-jwt-secret-0123456789abcdef0123456789", "SECRET_KEY=e2e-secret-key-0123456789abcdef0123456789",
			"ALLOW_PRIVATE_TARGETS=true", "LOG_LEVEL=warn", "QUOTA_PROFILES=100000",
			// One key creates profiles far faster than the default limit allows.
			"RATE_LIMIT=off")
	}
	start := func() *process {
		addr := freeAddr(t)
		return startProcess(t, t.TempDir(), env(addr), addr)
	}
	base := func(p *process) string { return "http://" + p.addr }

	// The doomed instance runs alone first, so the dispatcher that delivers
	// the probe profile's event is its own: that names its lease owner.
	doomed := start()
	var reg struct {
		AccessToken string `json:"accessToken"`
	}
	if status, err := post(base(doomed), "/api/v1/auth/register", "", map[string]any{"email": "hooks@example.com", "password": "two instances", "name": "Hooks"}, &reg); err != nil || status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, err)
	}
	if status, err := post(base(doomed), "/v1/webhooks", reg.AccessToken, map[string]any{"url": receiver.URL, "events": []string{"profile.created"}, "secret": "e2e-webhook-secret-0123456789abcdef"}, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, err)
	}
	createProfile := func(p *process, name string) (string, bool) {
		var out struct {
			ID string `json:"id"`
		}
		status, err := post(base(p), "/api/v1/profiles", reg.AccessToken, map[string]any{"name": name, "templateId": "tpl_chrome_win_us", "proxy": nil}, &out)
		return out.ID, err == nil && status == http.StatusCreated
	}
	probe, ok := createProfile(doomed, "probe")
	if !ok {
		t.Fatal("creating the probe profile failed")
	}
	var owner string
	poll.Check(t, 30*time.Second, "the probe profile's event to be delivered", func() error {
		mu.Lock()
		defer mu.Unlock()
		if owner = profileOwner[probe]; owner == "" {
			return fmt.Errorf("not delivered yet\n%s", doomed.output)
		}
		return nil
	})
	doomedOwner.Store(&owner)
	survivor := start()

	const n = 2000
	var created sync.Map // profile id -> true, for every 201
	created.Store(probe, true)
	var next atomic.Int64
	var killed atomic.Bool
	halfway := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > n {
					return
				}
				if i == n/2 {
					close(halfway)
				}
				target := survivor
				if w%2 == 1 && !killed.Load() {
					target = doomed
				}
				if id, ok := createProfile(target, fmt.Sprintf("p%d", i)); ok {
					created.Store(id, true)
				}
			}
		})
	}
	// The doomed instance's attempts time out (WEBHOOK_TIMEOUT, 5 s) and are
	// retried on the schedule 0s,5s,25s,125s, perhaps by itself again: the
	// kill must come before it could fail a delivery's fourth attempt, 170 s
	// after the first.
	preKill := time.Now().Add(2 * time.Minute)
	select {
	case <-halfway:
	case <-time.After(time.Until(preKill)):
		t.Fatal("the load generator did not reach halfway within 2 minutes")
	}

	// The takeover's precondition, read from the database: the doomed
	// instance holds unexpired leases on deliveries whose requests the
	// receiver has in hand.
	var inFlight []string
	poll.Check(t, time.Until(preKill), "the doomed instance to hold a leased delivery in flight", func() error {
		leased := leasedDeliveries(t, db, owner)
		mu.Lock()
		inFlight = inFlight[:0]
		for _, id := range leased {
			if held[id] > 0 {
				inFlight = append(inFlight, id)
			}
		}
		mu.Unlock()
		if len(inFlight) == 0 {
			return fmt.Errorf("none yet\n%s", doomed.output)
		}
		return nil
	})
	if err := doomed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	<-doomed.done
	wg.Wait()

	var want []string
	created.Range(func(k, _ any) bool { want = append(want, k.(string)); return true })
	if len(want) < n*9/10 {
		t.Fatalf("only %d of %d profiles were created", len(want), n)
	}
	// Done when every committed profile.created event was answered and
	// every delivery is recorded as succeeded: the lapsed leases included.
	// A lease lapses within 20 s, but a delivery the doomed instance failed
	// three times waits 125 s for its last attempt.
	poll.Check(t, 3*time.Minute, "every committed event and created profile at the receiver", func() error {
		committed := committedEvents(t, db)
		var unfinished int
		if err := db.QueryRow(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded'`).Scan(&unfinished); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		var missingEvents, missingProfiles int
		for _, id := range committed {
			if !delivered[id] {
				missingEvents++
			}
		}
		for _, id := range want {
			if profileOwner[id] == "" {
				missingProfiles++
			}
		}
		mu.Unlock()
		if missingEvents == 0 && missingProfiles == 0 && unfinished == 0 {
			return nil
		}
		return fmt.Errorf("%d of %d committed events and %d of %d created profiles never reached the receiver; %d deliveries not succeeded; %d requests found no lease\n%s",
			missingEvents, len(committed), missingProfiles, len(want), unfinished, lookupFailures.Load(), survivor.output)
	})

	mu.Lock()
	defer mu.Unlock()
	for _, id := range inFlight {
		if arrivals[id] < 2 || !delivered[id] {
			t.Errorf("event %s, in flight at the kill, arrived %d times, delivered %v: want a second delivery with the same id", id, arrivals[id], delivered[id])
		}
	}
	for id, seen := range attempts {
		for i := 1; i < len(seen); i++ {
			if seen[i] <= seen[i-1] {
				t.Errorf("event %s arrived with attempt numbers %v: a later arrival repeats an earlier number", id, seen)
				break
			}
		}
	}
	repeated := 0
	for _, c := range arrivals {
		repeated += c - 1
	}
	t.Logf("%d profiles created, %d distinct events delivered, %d in flight at the kill, %d requests repeated (same id), %d found no lease", len(want), len(delivered), len(inFlight), repeated, lookupFailures.Load())
}

// leasedDeliveries lists the events of the deliveries owner leases now.
func leasedDeliveries(t *testing.T, db *sql.DB, owner string) []string {
	t.Helper()
	return eventIDs(t, db, `SELECT event_id FROM webhook_deliveries WHERE lease_owner = $1 AND status = 'pending' AND lease_until > $2`, owner, time.Now().UTC())
}

// committedEvents lists the profile.created events in the outbox.
func committedEvents(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return eventIDs(t, db, `SELECT id FROM outbox_events WHERE type = 'profile.created'`)
}

func eventIDs(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
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
