package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// storeTimePrecision is the coarsest precision a store may keep. The suite
// writes times with nanoseconds and accepts any read-back within this distance
// (truncated or rounded): PostgreSQL keeps microseconds, SQLite keeps what the
// adapter formats, and the service never compares stored times more finely.
const storeTimePrecision = time.Millisecond

// storeEpoch has a full nanosecond part so that a store which silently drops
// more than storeTimePrecision is caught.
var storeEpoch = time.Date(2031, time.March, 14, 15, 9, 26, 535897932, time.UTC)

// storeZone is a non-UTC zone: times written in it must come back in UTC.
var storeZone = time.FixedZone("UTC+05:30", 5*3600+30*60)

// storeSeq makes ids unique across the whole test binary and ordered by
// creation, like the time-sortable ids of ports.IDs.
var storeSeq atomic.Uint64

func storeID(prefix string) string {
	return fmt.Sprintf("%s_%020d", prefix, storeSeq.Add(1))
}

func storeAt(d time.Duration) time.Time { return storeEpoch.Add(d) }

func storePtr(t time.Time) *time.Time { return &t }

// storeHash returns 32 bytes that include a zero byte and bytes above 0x7f,
// which text columns or string conversions would mangle.
func storeHash(seed byte) []byte {
	h := make([]byte, 32)
	for i := range h {
		h[i] = seed + byte(i*37)
	}
	h[3], h[4] = 0x00, 0xff
	return h
}

// storeFixture builds valid entities with the domain constructors and writes
// them through a set of repositories (the store itself or a transaction).
type storeFixture struct {
	t   *testing.T
	ctx context.Context
	s   storage.Store
}

func newStoreFixture(t *testing.T, newStore NewStore) storeFixture {
	t.Helper()
	s := newStore(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	return storeFixture{t: t, ctx: context.Background(), s: s}
}

func (f storeFixture) user(email string) account.User {
	f.t.Helper()
	id := storeID("usr")
	if email == "" {
		email = id + "@example.com"
	}
	u, err := account.NewUser(id, email, "Ada Lovelace", "$argon2id$v=19$m=65536,t=3,p=2$c2FsdA$aGFzaA", storeID("tm"), storeAt(0))
	if err != nil {
		f.t.Fatalf("account.NewUser(%q): %v", email, err)
	}
	return u
}

func (f storeFixture) team() team.Team {
	f.t.Helper()
	tm, err := team.NewTeam(storeID("tm"), "Growth team", storeAt(0))
	if err != nil {
		f.t.Fatalf("team.NewTeam: %v", err)
	}
	return tm
}

// owner returns an active owner membership of the team for a new user.
func (f storeFixture) owner(teamID string) team.Member {
	userID := storeID("usr")
	return team.NewOwner(storeID("mem"), teamID, userID, userID+"@example.com", storeAt(0))
}

// member returns a membership of the team for a new user with the role and
// status; only an active one has JoinedAt.
func (f storeFixture) member(teamID string, role team.Role, status team.Status) team.Member {
	userID := storeID("usr")
	m := team.NewInvited(storeID("mem"), teamID, userID, userID+"@example.com", role, storeAt(0))
	m.Status = status
	if status == team.StatusActive {
		m.JoinedAt = storePtr(storeAt(time.Minute))
	}
	return m
}

// invited returns the membership of an invited email that no account has.
func (f storeFixture) invited(teamID, email string) team.Member {
	return team.NewInvited(storeID("mem"), teamID, "", email, team.RoleMember, storeAt(time.Second))
}

func (f storeFixture) invitation(teamID, memberID, email string) team.Invitation {
	return team.Invitation{
		ID: storeID("inv"), TeamID: teamID, MemberID: memberID, Email: email,
		Hash: storeHash(17), CreatedAt: storeAt(0), ExpiresAt: storeAt(7 * 24 * time.Hour),
	}
}

func (f storeFixture) apiKey(teamID, userID string, created time.Time) account.APIKey {
	return account.APIKey{
		ID: storeID("key"), TeamID: teamID, UserID: userID, Name: "ci deploys",
		Prefix: "psk_ab12", Hash: storeHash(7), CreatedAt: created,
	}
}

func (f storeFixture) refreshToken(familyID, userID, teamID string) account.RefreshToken {
	return account.RefreshToken{
		ID: storeID("rtk"), FamilyID: familyID, UserID: userID, TeamID: teamID,
		Hash: storeHash(11), IssuedAt: storeAt(0), ExpiresAt: storeAt(30 * 24 * time.Hour),
	}
}

func (f storeFixture) resetToken(userID string) account.ResetToken {
	return account.ResetToken{
		ID: storeID("rst"), UserID: userID, Hash: storeHash(13),
		CreatedAt: storeAt(0), ExpiresAt: storeAt(time.Hour),
	}
}

// storeEventData has its keys out of alphabetical order so that a store which
// re-encodes the JSON (PostgreSQL jsonb does) is caught.
type storeEventData struct {
	Zeta  string         `json:"zeta"`
	Alpha map[string]int `json:"alpha"`
	Mid   []string       `json:"mid"`
}

func (f storeFixture) event(teamID string, at time.Time) event.Event {
	f.t.Helper()
	e, err := event.New(storeID("evt"), teamID, event.ProfileCreated, at,
		storeEventData{Zeta: "z \u00e9\u4e16 \"quoted\"", Alpha: map[string]int{"b": 2, "a": 1}, Mid: []string{"x", "y"}})
	if err != nil {
		f.t.Fatalf("event.New: %v", err)
	}
	return e
}

func (f storeFixture) must(what string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

func expectKind(t *testing.T, what string, err error, kind domain.Kind, kindName string) {
	t.Helper()
	if !domain.IsKind(err, kind) {
		t.Fatalf("%s: got error %v, want a domain %s error", what, err, kindName)
	}
}

func expectNotFound(t *testing.T, what string, err error) {
	t.Helper()
	expectKind(t, what, err, domain.KindNotFound, "not-found")
}

func expectConflict(t *testing.T, what string, err error) {
	t.Helper()
	expectKind(t, what, err, domain.KindConflict, "conflict")
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func checkIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got ids %v, want %v", what, got, want)
	}
}

// storeHangLimit is far beyond any honest call: it exists to turn a deadlock
// into a report that names the call, with every goroutine's stack.
const storeHangLimit = 30 * time.Second

// storeWithin runs fn on the test's goroutine (so fn may call t.Fatal) and
// crashes the binary with a message naming what hung if fn has not returned
// by storeHangLimit; a deadlocked fn can be stopped in no other way.
func storeWithin(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	defer close(done)
	go func() {
		timer := time.NewTimer(storeHangLimit)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			panic(fmt.Sprintf("%s: %s did not return within %v; the store looks deadlocked", t.Name(), what, storeHangLimit))
		}
	}()
	fn()
}
