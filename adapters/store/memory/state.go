package memory

import (
	"slices"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

// state is every row of the store. Stored values are never changed in place:
// a write stores a new value (sharing only what no one changes, such as a
// hash), so the undo log can keep the old value as it was.
type state struct {
	users         map[string]account.User
	userByEmail   map[string]string // normalised email -> user id
	teams         map[string]team.Team
	members       map[string]team.Member
	memberOf      map[memberKey]string      // team and non-empty user id -> membership id
	memberByEmail map[memberEmailKey]string // team and normalised email -> membership id
	membersOf     map[string][]string       // team id -> its membership ids, sorted
	invitations   map[string]team.Invitation
	apiKeys       map[string]account.APIKey
	refresh       map[string]account.RefreshToken
	resets        map[string]account.ResetToken
	profiles      map[string]profile.Profile // by id; ids are unique across teams
	profilesOf    map[string][]string        // team id -> its profile ids, sorted
	outbox        []event.Event              // sorted by ID, as ListAfter reads it
	dispatched    map[string]time.Time       // outbox event id -> when it was fanned out
	undispatched  []string                   // sorted ids of outbox events not yet fanned out
	endpoints     map[string]webhook.Endpoint
	endpointsOf   map[string][]string // team id -> its endpoint ids, sorted
	deliveries    map[string]deliveryRow
	pending       map[string]struct{}      // ids of pending deliveries, so claims skip finished ones
	deliveriesOf  map[endpointKey][]string // team and endpoint -> its delivery ids, sorted
}

// deliveryRow is a delivery with the lease a dispatcher holds on it, which
// the domain value does not carry.
type deliveryRow struct {
	d          webhook.Delivery
	leased     bool
	leaseOwner string
	leaseUntil time.Time
}

type endpointKey struct{ teamID, endpointID string }

type memberKey struct{ teamID, userID string }

type memberEmailKey struct{ teamID, email string }

func newState() state {
	return state{
		users:         map[string]account.User{},
		userByEmail:   map[string]string{},
		teams:         map[string]team.Team{},
		members:       map[string]team.Member{},
		memberOf:      map[memberKey]string{},
		memberByEmail: map[memberEmailKey]string{},
		membersOf:     map[string][]string{},
		invitations:   map[string]team.Invitation{},
		apiKeys:       map[string]account.APIKey{},
		refresh:       map[string]account.RefreshToken{},
		resets:        map[string]account.ResetToken{},
		profiles:      map[string]profile.Profile{},
		profilesOf:    map[string][]string{},
		dispatched:    map[string]time.Time{},
		endpoints:     map[string]webhook.Endpoint{},
		endpointsOf:   map[string][]string{},
		deliveries:    map[string]deliveryRow{},
		pending:       map[string]struct{}{},
		deliveriesOf:  map[endpointKey][]string{},
	}
}

// undoLog records how to reverse each write of a unit of work. A nil log
// records nothing: the write is outside any unit.
type undoLog struct{ steps []func() }

func (l *undoLog) record(step func()) {
	if l != nil {
		l.steps = append(l.steps, step)
	}
}

// rollback reverses the writes, newest first, so a row written twice ends
// with the value it had before the unit began.
func (l *undoLog) rollback() {
	for i := len(l.steps) - 1; i >= 0; i-- {
		l.steps[i]()
	}
	l.steps = nil
}

func put[K comparable, V any](undo *undoLog, m map[K]V, k K, v V) {
	old, had := m[k]
	undo.record(func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
	m[k] = v
}

func remove[K comparable, V any](undo *undoLog, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	undo.record(func() { m[k] = old })
	delete(m, k)
}

func compareEventID(e event.Event, id string) int { return strings.Compare(e.ID, id) }

// appendEvent inserts e in id order; it reports false when the id is taken.
func (st *state) appendEvent(undo *undoLog, e event.Event) bool {
	i, found := slices.BinarySearchFunc(st.outbox, e.ID, compareEventID)
	if found {
		return false
	}
	st.outbox = slices.Insert(st.outbox, i, e)
	undo.record(func() {
		if j, ok := slices.BinarySearchFunc(st.outbox, e.ID, compareEventID); ok {
			st.outbox = slices.Delete(st.outbox, j, j+1)
		}
	})
	st.setUndispatched(undo, e.ID, true)
	return true
}

// setUndispatched adds id to, or removes it from, the sorted ids of events
// awaiting fan-out, which lets a fan-out read them without scanning the
// whole outbox.
func (st *state) setUndispatched(undo *undoLog, id string, pending bool) {
	i, found := slices.BinarySearch(st.undispatched, id)
	switch {
	case pending && !found:
		st.undispatched = slices.Insert(st.undispatched, i, id)
	case !pending && found:
		st.undispatched = slices.Delete(st.undispatched, i, i+1)
	default:
		return
	}
	undo.record(func() { st.setUndispatched(nil, id, !pending) })
}

// The sorted id indexes change in place; the undo log records the inverse
// operation rather than a copy, so a write moves at most the ids after it
// (none when ids grow, as they do) instead of copying the whole index.

// addProfileID and removeProfileID keep a team's profile ids sorted.
func (st *state) addProfileID(undo *undoLog, teamID, id string) {
	addSortedID(undo, st.profilesOf, teamID, id)
}

// addMemberID adds a membership to its team's sorted ids, as addProfileID
// does. Memberships are never deleted, so nothing removes one.
func (st *state) addMemberID(undo *undoLog, teamID, id string) {
	addSortedID(undo, st.membersOf, teamID, id)
}

func addSortedID[K comparable](undo *undoLog, index map[K][]string, key K, id string) {
	ids := index[key]
	i, found := slices.BinarySearch(ids, id)
	if found {
		return
	}
	index[key] = slices.Insert(ids, i, id)
	undo.record(func() { removeSortedID(nil, index, key, id) })
}

func (st *state) removeProfileID(undo *undoLog, teamID, id string) {
	removeSortedID(undo, st.profilesOf, teamID, id)
}

func removeSortedID[K comparable](undo *undoLog, index map[K][]string, key K, id string) {
	ids := index[key]
	i, found := slices.BinarySearch(ids, id)
	if !found {
		return
	}
	if len(ids) == 1 {
		delete(index, key)
	} else {
		index[key] = slices.Delete(ids, i, i+1)
	}
	undo.record(func() { addSortedID(nil, index, key, id) })
}

// pageDown walks sorted ids down from below beforeID ("" for the top) and
// returns up to limit rows that row turns an id into and keeps: the paging
// of every List, newest (highest id) first. A limit below one returns none.
func pageDown[T any](ids []string, beforeID string, limit int, row func(id string) (T, bool)) []T {
	out := []T{}
	end := len(ids)
	if beforeID != "" {
		end, _ = slices.BinarySearch(ids, beforeID)
	}
	for i := end - 1; i >= 0 && len(out) < limit; i-- {
		if v, keep := row(ids[i]); keep {
			out = append(out, v)
		}
	}
	return out
}

// The clone functions copy everything a caller could change through a value:
// byte slices, tag slices, time and session pointers. Times are stored in UTC
// without a monotonic reading, as a database would return them.

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func cloneUser(u account.User) account.User {
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u
}

func cloneTeam(t team.Team) team.Team {
	t.CreatedAt = t.CreatedAt.UTC()
	return t
}

func cloneMember(m team.Member) team.Member {
	m.InvitedAt = m.InvitedAt.UTC()
	m.JoinedAt = utcPtr(m.JoinedAt)
	return m
}

func cloneInvitation(inv team.Invitation) team.Invitation {
	inv.Hash = slices.Clone(inv.Hash)
	inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
	inv.UsedAt = utcPtr(inv.UsedAt)
	return inv
}

func cloneAPIKey(k account.APIKey) account.APIKey {
	k.Hash = slices.Clone(k.Hash)
	k.CreatedAt = k.CreatedAt.UTC()
	k.LastUsedAt = utcPtr(k.LastUsedAt)
	return k
}

func cloneRefreshToken(t account.RefreshToken) account.RefreshToken {
	t.Hash = slices.Clone(t.Hash)
	t.IssuedAt, t.ExpiresAt = t.IssuedAt.UTC(), t.ExpiresAt.UTC()
	t.UsedAt, t.RevokedAt = utcPtr(t.UsedAt), utcPtr(t.RevokedAt)
	return t
}

func cloneResetToken(t account.ResetToken) account.ResetToken {
	t.Hash = slices.Clone(t.Hash)
	t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
	t.UsedAt = utcPtr(t.UsedAt)
	return t
}

func cloneEvent(e event.Event) event.Event {
	e.Data = slices.Clone(e.Data)
	e.OccurredAt = e.OccurredAt.UTC()
	return e
}

func cloneProfile(p profile.Profile) profile.Profile {
	p.Tags = slices.Clone(p.Tags)
	if p.Tags == nil {
		p.Tags = []string{}
	}
	p.Session = cloneSession(p.Session)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p
}

func cloneSession(s *profile.Session) *profile.Session {
	if s == nil {
		return nil
	}
	c := *s
	c.StartedAt, c.ExpiresAt = c.StartedAt.UTC(), c.ExpiresAt.UTC()
	return &c
}

func cloneEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	if e.Events == nil {
		e.Events = []string{}
	}
	e.SecretSealed = slices.Clone(e.SecretSealed)
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e
}

func cloneDelivery(d webhook.Delivery) webhook.Delivery {
	d.Payload = slices.Clone(d.Payload)
	attempts := make([]webhook.Attempt, len(d.Attempts))
	for i, a := range d.Attempts {
		a.At = a.At.UTC()
		attempts[i] = a
	}
	d.Attempts = attempts
	d.NextAttemptAt = d.NextAttemptAt.UTC()
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d
}
