package conformance

import (
	"bytes"
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

func checkTime(t *testing.T, field string, got, want time.Time) {
	t.Helper()
	if got.Location() != time.UTC {
		t.Errorf("%s: location %v, want UTC", field, got.Location())
	}
	if d := got.Sub(want); d <= -storeTimePrecision || d >= storeTimePrecision {
		t.Errorf("%s: got %v, want %v (within %v)", field, got, want, storeTimePrecision)
	}
}

func checkTimePtr(t *testing.T, field string, got, want *time.Time) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil:
		t.Errorf("%s: got nil, want %v", field, *want)
	case want == nil:
		t.Errorf("%s: got %v, want nil", field, *got)
	default:
		checkTime(t, field, *got, *want)
	}
}

func checkField[T comparable](t *testing.T, field string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", field, got, want)
	}
}

func checkBytes(t *testing.T, field string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %x, want %x", field, got, want)
	}
}

func checkUser(t *testing.T, got, want account.User) {
	t.Helper()
	checkField(t, "user.ID", got.ID, want.ID)
	checkField(t, "user.Email", got.Email, want.Email)
	checkField(t, "user.Name", got.Name, want.Name)
	checkField(t, "user.PasswordHash", got.PasswordHash, want.PasswordHash)
	checkField(t, "user.DefaultTeamID", got.DefaultTeamID, want.DefaultTeamID)
	checkTime(t, "user.CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, "user.UpdatedAt", got.UpdatedAt, want.UpdatedAt)
}

func checkTeam(t *testing.T, got, want team.Team) {
	t.Helper()
	checkField(t, "team.ID", got.ID, want.ID)
	checkField(t, "team.Name", got.Name, want.Name)
	checkTime(t, "team.CreatedAt", got.CreatedAt, want.CreatedAt)
}

func checkMember(t *testing.T, got, want team.Member) {
	t.Helper()
	checkField(t, "member.ID", got.ID, want.ID)
	checkField(t, "member.TeamID", got.TeamID, want.TeamID)
	checkField(t, "member.UserID", got.UserID, want.UserID)
	checkField(t, "member.Email", got.Email, want.Email)
	checkField(t, "member.Role", got.Role, want.Role)
	checkField(t, "member.Status", got.Status, want.Status)
	checkTime(t, "member.InvitedAt", got.InvitedAt, want.InvitedAt)
	checkTimePtr(t, "member.JoinedAt", got.JoinedAt, want.JoinedAt)
}

func checkInvitation(t *testing.T, got, want team.Invitation) {
	t.Helper()
	checkField(t, "invitation.ID", got.ID, want.ID)
	checkField(t, "invitation.TeamID", got.TeamID, want.TeamID)
	checkField(t, "invitation.MemberID", got.MemberID, want.MemberID)
	checkField(t, "invitation.Email", got.Email, want.Email)
	checkBytes(t, "invitation.Hash", got.Hash, want.Hash)
	checkTime(t, "invitation.CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, "invitation.ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	checkTimePtr(t, "invitation.UsedAt", got.UsedAt, want.UsedAt)
}

func checkAPIKey(t *testing.T, got, want account.APIKey) {
	t.Helper()
	checkField(t, "apikey.ID", got.ID, want.ID)
	checkField(t, "apikey.TeamID", got.TeamID, want.TeamID)
	checkField(t, "apikey.UserID", got.UserID, want.UserID)
	checkField(t, "apikey.Name", got.Name, want.Name)
	checkField(t, "apikey.Prefix", got.Prefix, want.Prefix)
	checkBytes(t, "apikey.Hash", got.Hash, want.Hash)
	checkTime(t, "apikey.CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTimePtr(t, "apikey.LastUsedAt", got.LastUsedAt, want.LastUsedAt)
}

func checkRefreshToken(t *testing.T, got, want account.RefreshToken) {
	t.Helper()
	checkField(t, "refresh.ID", got.ID, want.ID)
	checkField(t, "refresh.FamilyID", got.FamilyID, want.FamilyID)
	checkField(t, "refresh.UserID", got.UserID, want.UserID)
	checkField(t, "refresh.TeamID", got.TeamID, want.TeamID)
	checkBytes(t, "refresh.Hash", got.Hash, want.Hash)
	checkTime(t, "refresh.IssuedAt", got.IssuedAt, want.IssuedAt)
	checkTime(t, "refresh.ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	checkTimePtr(t, "refresh.UsedAt", got.UsedAt, want.UsedAt)
	checkTimePtr(t, "refresh.RevokedAt", got.RevokedAt, want.RevokedAt)
}

func checkResetToken(t *testing.T, got, want account.ResetToken) {
	t.Helper()
	checkField(t, "reset.ID", got.ID, want.ID)
	checkField(t, "reset.UserID", got.UserID, want.UserID)
	checkBytes(t, "reset.Hash", got.Hash, want.Hash)
	checkTime(t, "reset.CreatedAt", got.CreatedAt, want.CreatedAt)
	checkTime(t, "reset.ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	checkTimePtr(t, "reset.UsedAt", got.UsedAt, want.UsedAt)
}

// checkEvent demands the exact bytes of Data: webhook signatures are computed
// over the payload, so a store that re-encodes it would change what receivers
// verify.
func checkEvent(t *testing.T, got, want event.Event) {
	t.Helper()
	checkField(t, "event.ID", got.ID, want.ID)
	checkField(t, "event.TeamID", got.TeamID, want.TeamID)
	checkField(t, "event.Type", got.Type, want.Type)
	checkTime(t, "event.OccurredAt", got.OccurredAt, want.OccurredAt)
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("event.Data: got %s, want exactly %s", got.Data, want.Data)
	}
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
