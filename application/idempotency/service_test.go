package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/idempotency"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// world is a primary store in miniature: idempotency records and a count of
// effects (say, created profiles), changed by units of work that run one at
// a time and roll back on error, as the memory store's do.
type world struct {
	mu      sync.Mutex // held by a unit from start to end
	recs    map[ports.IdempotencyKey]ports.IdempotencyRecord
	effects int
	// staged is the effect count and records of the running unit.
	staged *stage

	findErr, completeErr error
	completed            []ports.IdempotencyRecord
}

type stage struct {
	effects int
	recs    map[ports.IdempotencyKey]ports.IdempotencyRecord
}

type inUnit struct{}

func newWorld() *world { return &world{recs: map[ports.IdempotencyKey]ports.IdempotencyRecord{}} }

// Do is the bare unit of work the claiming decorator wraps.
func (w *world) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.staged = &stage{recs: map[ports.IdempotencyKey]ports.IdempotencyRecord{}}
	defer func() { w.staged = nil }()
	if err := fn(context.WithValue(ctx, inUnit{}, true)); err != nil {
		return err
	}
	w.effects += w.staged.effects
	for k, rec := range w.staged.recs {
		w.recs[k] = rec
	}
	return nil
}

// effect is the work of a use case, inside the unit ctx carries or alone.
func (w *world) effect(ctx context.Context) {
	if ctx.Value(inUnit{}) != nil {
		w.staged.effects++
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.effects++
}

func (w *world) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.effects
}

// records are the world's records; a call inside a unit runs under the
// unit's lock already.
type records struct{ w *world }

func (r records) locked(ctx context.Context, fn func()) {
	if ctx.Value(inUnit{}) == nil {
		r.w.mu.Lock()
		defer r.w.mu.Unlock()
	}
	fn()
}

func (r records) Claim(ctx context.Context, rec ports.IdempotencyRecord, now time.Time) (bool, error) {
	if ctx.Value(inUnit{}) == nil {
		return false, errors.New("claim outside a unit of work")
	}
	if old, ok := r.w.recs[rec.IdempotencyKey]; ok && old.ExpiresAt.After(now) {
		return false, nil
	}
	r.w.staged.recs[rec.IdempotencyKey] = rec
	return true, nil
}

func (r records) Find(ctx context.Context, k ports.IdempotencyKey, now time.Time) (rec ports.IdempotencyRecord, found bool, err error) {
	r.locked(ctx, func() {
		if r.w.findErr != nil {
			err = r.w.findErr
			return
		}
		rec, found = r.w.recs[k]
		found = found && rec.ExpiresAt.After(now)
	})
	return rec, found, err
}

// Complete fails on an ended context, as a database call would.
func (r records) Complete(ctx context.Context, rec ports.IdempotencyRecord) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.locked(ctx, func() {
		if r.w.completeErr != nil {
			err = r.w.completeErr
			return
		}
		if _, ok := r.w.recs[rec.IdempotencyKey]; !ok {
			err = domain.NotFound("idempotency record")
			return
		}
		r.w.recs[rec.IdempotencyKey] = rec
		r.w.completed = append(r.w.completed, rec)
	})
	return err
}

func (r records) CountLive(ctx context.Context, teamID string, now time.Time) (n int, err error) {
	r.locked(ctx, func() {
		for k, rec := range r.w.recs {
			if k.TeamID == teamID && rec.ExpiresAt.After(now) {
				n++
			}
		}
	})
	return n, nil
}

func (r records) DeleteExpired(ctx context.Context, now time.Time, limit int) (n int, err error) {
	r.locked(ctx, func() {
		for k, rec := range r.w.recs {
			if n < limit && !rec.ExpiresAt.After(now) {
				delete(r.w.recs, k)
				n++
			}
		}
	})
	return n, nil
}

type fixture struct {
	w     *world
	clock *clock.Fake
	logs  *apptest.Logs
	svc   *idempotency.Service
	tx    ports.UnitOfWork
}

func newFixture(limits idempotency.Limits) *fixture {
	w := newWorld()
	f := &fixture{w: w, clock: clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), logs: &apptest.Logs{}}
	f.svc = idempotency.New(idempotency.Deps{Records: records{w}, Clock: f.clock, Log: f.logs.Logger(), Limits: limits})
	f.tx = unit.New(w, f.svc)
	return f
}

var (
	ada   = team.Actor{UserID: "usr_ada", TeamID: "team_1", Role: team.RoleOwner}
	grace = team.Actor{UserID: "usr_grace", TeamID: "team_2", Role: team.RoleOwner}
)

func post(key, body string) idempotency.Request {
	return idempotency.Request{Key: key, Method: "POST", Path: "/api/v1/profiles", Body: []byte(body)}
}

// run is one request through the middleware's steps: Begin, the handler
// (one unit with an effect, unless noUnit) and Finish. It returns the
// replayed record, if the request got one, and the error it answered.
func (f *fixture) run(t *testing.T, actor team.Actor, r idempotency.Request, resp idempotency.Response) (*ports.IdempotencyRecord, error) {
	t.Helper()
	ctx := context.Background()
	b, err := f.svc.Begin(ctx, actor, r)
	if err != nil || b.Replay != nil {
		return b.Replay, err
	}
	ctx = idempotency.WithClaim(ctx, b.Claim)
	_ = f.tx.Do(ctx, func(ctx context.Context) error { f.w.effect(ctx); return nil })
	return f.svc.Finish(ctx, b.Claim, resp)
}

// begin starts ada's request with key k1 and returns ctx carrying its claim.
func (f *fixture) begin(t *testing.T, ctx context.Context) (context.Context, *idempotency.Claim) {
	t.Helper()
	b, err := f.svc.Begin(ctx, ada, post("k1", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	return idempotency.WithClaim(ctx, b.Claim), b.Claim
}

var created = idempotency.Response{Status: 201, Headers: map[string]string{"Location": "/api/v1/profiles/prf_1"}, Body: []byte(`{"id":"prf_1"}`)}

func TestSameKeyAndBodyReplaysTheFirstResponse(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	resp := created
	resp.Headers = map[string]string{"Location": "/api/v1/profiles/prf_1"}
	if rec, err := f.run(t, ada, post("k1", `{"name":"a"}`), resp); rec != nil || err != nil {
		t.Fatalf("first request: %+v %v", rec, err)
	}
	resp.Headers["Location"] = "changed by the handler afterwards"
	rec, err := f.run(t, ada, post("k1", `{"name":"a"}`), created)
	if err != nil || rec == nil {
		t.Fatalf("replay: %+v %v", rec, err)
	}
	if rec.Status != 201 || string(rec.Body) != `{"id":"prf_1"}` || rec.Headers["Location"] != "/api/v1/profiles/prf_1" {
		t.Fatalf("replay %+v", rec)
	}
	if want := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC); !rec.ExpiresAt.Equal(want) {
		t.Fatalf("expires at %s, want %s", rec.ExpiresAt, want)
	}
	if n := f.w.count(); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
}

func TestSameKeyWithAnotherRequestIsRefused(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	if _, err := f.run(t, ada, post("k1", `{"name":"a"}`), created); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]idempotency.Request{
		"body":   post("k1", `{"name":"b"}`),
		"path":   {Key: "k1", Method: "POST", Path: "/api/v1/api-keys", Body: []byte(`{"name":"a"}`)},
		"method": {Key: "k1", Method: "PUT", Path: "/api/v1/profiles", Body: []byte(`{"name":"a"}`)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.svc.Begin(context.Background(), ada, r)
			apptest.WantKind(t, err, domain.KindValidation)
		})
	}
}

func TestKeysAreScopedToUserAndTeam(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	if _, err := f.run(t, ada, post("k1", `{}`), created); err != nil {
		t.Fatal(err)
	}
	for _, actor := range []team.Actor{grace, {UserID: "usr_ada", TeamID: "team_2"}, {UserID: "usr_bob", TeamID: "team_1"}} {
		if rec, err := f.run(t, actor, post("k1", `{}`), created); rec != nil || err != nil {
			t.Fatalf("%+v replayed another scope's record: %+v %v", actor, rec, err)
		}
	}
	if n := f.w.count(); n != 4 {
		t.Fatalf("%d effects, want 4", n)
	}
}

func TestRequestWithoutACommittedUnitKeepsNothing(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	ctx := context.Background()
	ctx, claim := f.begin(t, ctx)
	refused := domain.Invalid("name", "is required")
	if err := f.tx.Do(ctx, func(ctx context.Context) error { f.w.effect(ctx); return refused }); !errors.Is(err, refused) {
		t.Fatalf("unit: %v", err)
	}
	if rec, err := f.svc.Finish(ctx, claim, idempotency.Response{Status: 422, Body: []byte(`{}`)}); rec != nil || err != nil {
		t.Fatalf("finish: %+v %v", rec, err)
	}
	if len(f.w.recs) != 0 || f.w.count() != 0 {
		t.Fatalf("records %v, effects %d after a rolled-back unit", f.w.recs, f.w.count())
	}
	if rec, err := f.run(t, ada, post("k1", `{}`), created); rec != nil || err != nil {
		t.Fatalf("retry did not run: %+v %v", rec, err)
	}
	if f.w.count() != 1 {
		t.Fatalf("%d effects, want 1", f.w.count())
	}
}

func TestOnlyTheFirstCommittedUnitClaims(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	ctx := context.Background()
	ctx, claim := f.begin(t, ctx)
	for range 2 { // a use case that commits two units, as a launch does
		if err := f.tx.Do(ctx, func(ctx context.Context) error { f.w.effect(ctx); return nil }); err != nil {
			t.Fatalf("unit: %v", err)
		}
	}
	if _, err := f.svc.Finish(ctx, claim, created); err != nil {
		t.Fatal(err)
	}
	if f.w.count() != 2 || len(f.w.completed) != 1 {
		t.Fatalf("effects %d, completed %d", f.w.count(), len(f.w.completed))
	}
}

// TestTheLoserOfARaceRollsBackAndAnswersTheFirstResponse: two requests
// with one key both pass Begin; the second to commit loses its effect.
func TestTheLoserOfARaceRollsBackAndAnswersTheFirstResponse(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	ctx := context.Background()
	r := post("k1", `{}`)
	one, err := f.svc.Begin(ctx, ada, r)
	if err != nil {
		t.Fatal(err)
	}
	two, err := f.svc.Begin(ctx, ada, r)
	if err != nil {
		t.Fatal(err)
	}
	ctxOne, ctxTwo := idempotency.WithClaim(ctx, one.Claim), idempotency.WithClaim(ctx, two.Claim)
	if err := f.tx.Do(ctxOne, func(ctx context.Context) error { f.w.effect(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	err = f.tx.Do(ctxTwo, func(ctx context.Context) error { f.w.effect(ctx); return nil })
	apptest.WantKind(t, err, domain.KindConflict)
	if f.w.count() != 1 {
		t.Fatalf("%d effects, want 1", f.w.count())
	}
	// The first has not finished yet: the loser is told to retry.
	_, err = f.svc.Finish(ctxTwo, two.Claim, idempotency.Response{Status: 409})
	apptest.WantKind(t, err, domain.KindConflict)
	if _, err := f.svc.Finish(ctxOne, one.Claim, created); err != nil {
		t.Fatal(err)
	}
	rec, err := f.svc.Finish(ctxTwo, two.Claim, idempotency.Response{Status: 409})
	if err != nil || rec == nil || string(rec.Body) != `{"id":"prf_1"}` {
		t.Fatalf("loser after the first finished: %+v %v", rec, err)
	}
}

func TestConcurrentRequestsWithOneKeyTakeEffectOnce(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = f.run(t, ada, post("race", `{}`), created) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !domain.IsKind(err, domain.KindConflict) {
			t.Fatalf("error %v, want none or a conflict", err)
		}
	}
	if f.w.count() != 1 {
		t.Fatalf("%d effects from %d requests with one key", f.w.count(), n)
	}
}

func TestRequestStillRunningAndLostResponses(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	ctx := context.Background()
	b, err := f.svc.Begin(ctx, ada, post("k1", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	// The effect commits, and the instance dies before Finish.
	if err := f.tx.Do(idempotency.WithClaim(ctx, b.Claim), func(ctx context.Context) error { f.w.effect(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Begin(ctx, ada, post("k1", `{}`))
	apptest.WantKind(t, err, domain.KindConflict)
	if !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("err = %v", err)
	}
	f.clock.Advance(5 * time.Minute)
	_, err = f.svc.Begin(ctx, ada, post("k1", `{}`))
	apptest.WantKind(t, err, domain.KindConflict)
	if !strings.Contains(err.Error(), "response was lost") {
		t.Fatalf("err = %v", err)
	}
	if f.w.count() != 1 {
		t.Fatalf("%d effects, want 1", f.w.count())
	}
}

func TestCredentialsAreNeverKept(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	secret := `{"key":"psvc_abc_0123456789"}`
	resp := idempotency.Response{Status: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(secret), Credentials: true}
	if _, err := f.run(t, ada, post("k1", `{"name":"ci"}`), resp); err != nil {
		t.Fatal(err)
	}
	if len(f.w.completed) != 1 {
		t.Fatalf("completed %d", len(f.w.completed))
	}
	kept := f.w.completed[0]
	if kept.Body != nil || kept.Headers != nil || kept.Withheld != ports.IdempotencyWithheldCredentials || kept.Status != 201 {
		t.Fatalf("kept %+v", kept)
	}
	_, err := f.run(t, ada, post("k1", `{"name":"ci"}`), resp)
	apptest.WantKind(t, err, domain.KindConflict)
	if !strings.Contains(err.Error(), "shown once") || strings.Contains(err.Error(), "psvc_") {
		t.Fatalf("err = %v", err)
	}
	if f.w.count() != 1 {
		t.Fatalf("%d effects, want 1", f.w.count())
	}
}

func TestResponsesOverTheLimitAreNotKept(t *testing.T) {
	f := newFixture(idempotency.Limits{MaxResponseBytes: 10})
	if _, err := f.run(t, ada, post("small", `{}`), idempotency.Response{Status: 200, Body: []byte("0123456789")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, ada, post("large", `{}`), idempotency.Response{Status: 201, Body: []byte("0123456789a")}); err != nil {
		t.Fatal(err)
	}
	rec, err := f.run(t, ada, post("small", `{}`), created)
	if err != nil || rec == nil || string(rec.Body) != "0123456789" {
		t.Fatalf("a response at the limit: %+v %v", rec, err)
	}
	_, err = f.run(t, ada, post("large", `{}`), created)
	apptest.WantKind(t, err, domain.KindConflict)
	if !strings.Contains(err.Error(), "succeeded (status 201)") || !strings.Contains(err.Error(), "not kept") {
		t.Fatalf("err = %v", err)
	}
	if f.w.completed[1].Body != nil || f.w.completed[1].Withheld != ports.IdempotencyWithheldTooLarge {
		t.Fatalf("kept %+v", f.w.completed[1])
	}
}

func TestTeamsAreBoundedAlone(t *testing.T) {
	f := newFixture(idempotency.Limits{KeysPerTeam: 2})
	for _, k := range []string{"k1", "k2"} {
		if _, err := f.run(t, ada, post(k, `{}`), created); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.run(t, ada, post("k3", `{}`), created)
	apptest.WantKind(t, err, domain.KindRateLimited)
	var de *domain.Error
	if !errors.As(err, &de) || de.RetryAfter <= 0 || !strings.Contains(de.Message, "Idempotency-Key") {
		t.Fatalf("err = %#v", err)
	}
	// Another user of the team shares its bound; another team does not.
	_, err = f.run(t, team.Actor{UserID: "usr_bob", TeamID: "team_1"}, post("k1", `{}`), created)
	apptest.WantKind(t, err, domain.KindRateLimited)
	if _, err := f.run(t, grace, post("k3", `{}`), created); err != nil {
		t.Fatalf("another team: %v", err)
	}
	// A replay within the bound still answers.
	if rec, err := f.run(t, ada, post("k1", `{}`), created); err != nil || rec == nil {
		t.Fatalf("replay: %+v %v", rec, err)
	}
	f.clock.Advance(24 * time.Hour)
	if rec, err := f.run(t, ada, post("k3", `{}`), created); rec != nil || err != nil {
		t.Fatalf("after the records expired: %+v %v", rec, err)
	}
}

func TestRecordsExpireAndAreSwept(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	if _, err := f.run(t, ada, post("k1", `{}`), created); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(24*time.Hour - time.Second)
	if rec, _ := f.run(t, ada, post("k1", `{}`), created); rec == nil {
		t.Fatal("not replayed within 24 h")
	}
	f.clock.Advance(time.Second)
	if rec, err := f.run(t, ada, post("k1", `{}`), created); rec != nil || err != nil {
		t.Fatalf("replayed after 24 h: %+v %v", rec, err)
	}
	f.clock.Advance(24 * time.Hour)
	if _, err := f.run(t, grace, post("k9", `{}`), created); err != nil {
		t.Fatal(err)
	}
	if len(f.w.recs) != 1 {
		t.Fatalf("%d records left, want the new one alone", len(f.w.recs))
	}
	if f.w.count() != 3 {
		t.Fatalf("%d effects, want 3", f.w.count())
	}
}

func TestBeginRefusesMalformedKeys(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	for _, k := range []string{"", strings.Repeat("k", 256), "tab\tkey", "é"} {
		_, err := f.svc.Begin(context.Background(), ada, post(k, `{}`))
		apptest.WantKind(t, err, domain.KindBadRequest)
	}
	if _, err := f.svc.Begin(context.Background(), ada, post(strings.Repeat("k", 255), `{}`)); err != nil {
		t.Fatalf("a 255-character key: %v", err)
	}
}

func TestStoreErrors(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	f.w.findErr = apptest.ErrDown
	_, err := f.svc.Begin(context.Background(), ada, post("k1", `{}`))
	apptest.WantDown(t, err)

	f.w.findErr, f.w.completeErr = nil, apptest.ErrDown
	rec, err := f.run(t, ada, post("k1", `{}`), created)
	if rec != nil || err != nil {
		t.Fatalf("a failed Complete changes the response: %+v %v", rec, err)
	}
	if !f.logs.Has("ERROR keeping an idempotent response failed") {
		t.Fatalf("logs %v", f.logs.Lines())
	}
	// The claim committed with the effect: a replay does not run it again.
	f.w.completeErr = nil
	_, err = f.run(t, ada, post("k1", `{}`), created)
	apptest.WantKind(t, err, domain.KindConflict)
	if f.w.count() != 1 {
		t.Fatalf("%d effects, want 1", f.w.count())
	}
}

func TestFinishAfterTheClientLeftKeepsTheResponse(t *testing.T) {
	f := newFixture(idempotency.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	ctx, claim := f.begin(t, ctx)
	if err := f.tx.Do(ctx, func(ctx context.Context) error { f.w.effect(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.svc.Finish(ctx, claim, created); err != nil {
		t.Fatal(err)
	}
	if len(f.w.completed) != 1 {
		t.Fatal("the response was not kept")
	}
}
