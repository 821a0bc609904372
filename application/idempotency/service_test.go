package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/idempotency"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// store keeps records in a map, records the lifetime each write asked
// for, and fails on demand. Of concurrent reservations of a key exactly one
// wins, as the port requires.
type store struct {
	mu          sync.Mutex
	recs        map[string]ports.IdempotencyRecord
	ttls        map[string]time.Duration
	reserveErr  error
	completeErr error
	releaseErr  error
}

func newStore() *store {
	return &store{recs: map[string]ports.IdempotencyRecord{}, ttls: map[string]time.Duration{}}
}

func (s *store) Reserve(_ context.Context, key string, fp []byte, ttl time.Duration) (ports.IdempotencyRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserveErr != nil {
		return ports.IdempotencyRecord{}, false, s.reserveErr
	}
	if rec, ok := s.recs[key]; ok {
		return rec, false, nil
	}
	s.recs[key] = ports.IdempotencyRecord{Fingerprint: fp}
	s.ttls[key] = ttl
	return s.recs[key], true, nil
}

// Complete keeps rec itself, not a copy, so that a caller that reuses its
// maps afterwards would show in the record.
func (s *store) Complete(_ context.Context, key string, rec ports.IdempotencyRecord, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.completeErr != nil {
		return s.completeErr
	}
	s.recs[key] = rec
	s.ttls[key] = ttl
	return nil
}

func (s *store) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.releaseErr != nil {
		return s.releaseErr
	}
	delete(s.recs, key)
	delete(s.ttls, key)
	return nil
}

func (s *store) lifetime(key string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ttls[key]
}

var ada = team.Actor{UserID: "usr_ada", TeamID: "team_1", Role: team.RoleOwner}

// newService is a service over st whose logs no test reads.
func newService(st ports.IdempotencyStore) *idempotency.Service {
	return idempotency.New(st, slog.New(slog.DiscardHandler))
}

func post(key, body string) idempotency.Request {
	return idempotency.Request{Key: key, Method: "POST", Path: "/api/v1/profiles", Body: []byte(body)}
}

func begin(t *testing.T, svc *idempotency.Service, actor team.Actor, r idempotency.Request) idempotency.Begun {
	t.Helper()
	b, err := svc.Begin(context.Background(), actor, r)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	return b
}

func TestSameKeyAndBodyReplaysTheFirstResponse(t *testing.T) {
	st := newStore()
	svc := newService(st)
	ctx := context.Background()

	first := begin(t, svc, ada, post("k1", `{"name":"a"}`))
	if first.Replay != nil {
		t.Fatalf("the first request replayed %+v", first.Replay)
	}
	if got := st.lifetime("idem:team_1:usr_ada:k1"); got != 5*time.Minute {
		t.Fatalf("reserved for %s, want 5m", got)
	}
	headers := map[string]string{"Location": "/api/v1/profiles/prf_1"}
	svc.Finish(ctx, first, 201, headers, []byte(`{"id":"prf_1"}`))
	headers["Location"] = "changed by the handler afterwards"
	if got := st.lifetime("idem:team_1:usr_ada:k1"); got != 24*time.Hour {
		t.Fatalf("kept for %s, want 24h", got)
	}

	again := begin(t, svc, ada, post("k1", `{"name":"a"}`))
	if again.Replay == nil {
		t.Fatal("the same request ran again")
	}
	r := again.Replay
	if !r.Done || r.Status != 201 || string(r.Body) != `{"id":"prf_1"}` || r.Headers["Location"] != "/api/v1/profiles/prf_1" {
		t.Fatalf("replay %+v", r)
	}
}

func TestSameKeyWithAnotherRequestIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    idempotency.Request
	}{
		{"another body", post("k1", `{"name":"b"}`)},
		{"another path", idempotency.Request{Key: "k1", Method: "POST", Path: "/api/v1/proxies", Body: []byte(`{"name":"a"}`)}},
		{"another method", idempotency.Request{Key: "k1", Method: "PUT", Path: "/api/v1/profiles", Body: []byte(`{"name":"a"}`)}},
		// The parts are delimited: moving bytes from one to the next is
		// another request.
		{"bytes moved between parts", idempotency.Request{Key: "k1", Method: "POST/api", Path: "/v1/profiles", Body: []byte(`{"name":"a"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(newStore())
			svc.Finish(context.Background(), begin(t, svc, ada, post("k1", `{"name":"a"}`)), 201, nil, nil)
			_, err := svc.Begin(context.Background(), ada, tc.r)
			apptest.WantKind(t, err, domain.KindValidation)
		})
	}
}

func TestRequestStillRunningIsAConflict(t *testing.T) {
	svc := newService(newStore())
	begin(t, svc, ada, post("k1", "{}"))
	_, err := svc.Begin(context.Background(), ada, post("k1", "{}"))
	apptest.WantKind(t, err, domain.KindConflict)
}

// Of concurrent first requests with one key exactly one runs.
func TestConcurrentRequestsWithOneKeyRunOnce(t *testing.T) {
	svc := newService(newStore())
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		run      int
		conflict int
	)
	gate := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			b, err := svc.Begin(context.Background(), ada, post("k1", "{}"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && b.Replay == nil:
				run++
			case domain.IsKind(err, domain.KindConflict):
				conflict++
			default:
				t.Errorf("begin: %+v, %v", b, err)
			}
		}()
	}
	close(gate)
	wg.Wait()
	if run != 1 || conflict != n-1 {
		t.Fatalf("%d ran, %d conflicts; want 1 and %d", run, conflict, n-1)
	}
}

// A server error frees the key, so the client's retry runs.
func TestServerErrorFreesTheKey(t *testing.T) {
	st := newStore()
	svc := newService(st)
	svc.Finish(context.Background(), begin(t, svc, ada, post("k1", "{}")), 503, nil, []byte("down"))
	if b := begin(t, svc, ada, post("k1", "{}")); b.Replay != nil {
		t.Fatalf("a server error was replayed: %+v", b.Replay)
	}
}

// A client error is a response like any other: it is replayed.
func TestClientErrorIsReplayed(t *testing.T) {
	svc := newService(newStore())
	svc.Finish(context.Background(), begin(t, svc, ada, post("k1", "{}")), 422, nil, []byte("invalid"))
	if b := begin(t, svc, ada, post("k1", "{}")); b.Replay == nil || b.Replay.Status != 422 {
		t.Fatalf("replay %+v", b.Replay)
	}
}

// A key is one user's in one team.
func TestKeysAreScopedToUserAndTeam(t *testing.T) {
	svc := newService(newStore())
	svc.Finish(context.Background(), begin(t, svc, ada, post("k1", "{}")), 201, nil, nil)
	for _, other := range []team.Actor{
		{UserID: "usr_bob", TeamID: "team_1", Role: team.RoleOwner},
		{UserID: "usr_ada", TeamID: "team_2", Role: team.RoleOwner},
	} {
		if b := begin(t, svc, other, post("k1", `{"other":true}`)); b.Replay != nil {
			t.Fatalf("%+v saw ada's response", other)
		}
	}
}

func TestBeginRefusesMalformedKeys(t *testing.T) {
	svc := newService(newStore())
	for _, key := range []string{"", strings.Repeat("k", 256), "tab\there", "é"} {
		_, err := svc.Begin(context.Background(), ada, post(key, "{}"))
		apptest.WantKind(t, err, domain.KindBadRequest)
	}
	begin(t, svc, ada, post(strings.Repeat("k", 255), "{}"))
	begin(t, svc, ada, post(" ~", "{}"))
}

func TestBeginStoreError(t *testing.T) {
	st := newStore()
	st.reserveErr = apptest.ErrDown
	_, err := newService(st).Begin(context.Background(), ada, post("k1", "{}"))
	if !errors.Is(err, apptest.ErrDown) {
		t.Fatalf("err = %v, want %v", err, apptest.ErrDown)
	}
}

// The response still goes out when it cannot be kept; the failure is
// logged.
func TestFinishStoreErrorIsLogged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		fail   func(st *store)
	}{
		{"complete", 201, func(st *store) { st.completeErr = apptest.ErrDown }},
		{"release", 500, func(st *store) { st.releaseErr = apptest.ErrDown }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore()
			logs := &apptest.Logs{}
			svc := idempotency.New(st, logs.Logger())
			b := begin(t, svc, ada, post("k1", "{}"))
			tc.fail(st)
			svc.Finish(context.Background(), b, tc.status, nil, nil)
			if got := logs.Lines(); len(got) != 1 || got[0] != "ERROR keeping an idempotent response failed error=backend is down" {
				t.Fatalf("logged %v", got)
			}
		})
	}
}

// cancelAware fails writes whose context has ended, as a network client
// does.
type cancelAware struct{ *store }

func (c cancelAware) Complete(ctx context.Context, key string, rec ports.IdempotencyRecord, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.store.Complete(ctx, key, rec, ttl)
}

// The client hanging up after the work was done still keeps the response.
func TestFinishAfterTheClientLeftKeepsTheResponse(t *testing.T) {
	st := newStore()
	svc := newService(cancelAware{st})
	ctx, cancel := context.WithCancel(context.Background())
	b := begin(t, svc, ada, post("k1", "{}"))
	cancel()
	svc.Finish(ctx, b, 201, nil, []byte("made"))
	if again := begin(t, svc, ada, post("k1", "{}")); again.Replay == nil || string(again.Replay.Body) != "made" {
		t.Fatalf("replay %+v", again.Replay)
	}
}
