package memory

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IdempotencyRecords = idempotencyRecords{}

type idempotencyRecords struct{ s *Store }

// idempotencyID is the row id of a key: its three parts joined by a byte
// none of them may hold (keys are printable ASCII, ids have no NUL).
func idempotencyID(k ports.IdempotencyKey) string {
	return k.TeamID + "\x00" + k.Scope + "\x00" + k.Key
}

func idempotencyRowKey(r *ports.IdempotencyRecord) rowKey {
	return rowKey{id: idempotencyID(r.IdempotencyKey), teamID: r.TeamID}
}

func cloneIdempotencyRecord(r ports.IdempotencyRecord) ports.IdempotencyRecord {
	r.Fingerprint = slices.Clone(r.Fingerprint)
	r.Headers = maps.Clone(r.Headers)
	r.Body = slices.Clone(r.Body)
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	return r
}

func (r idempotencyRecords) Claim(ctx context.Context, rec ports.IdempotencyRecord, now time.Time) (bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (bool, error) {
		if old, err := st.idempotency.get(idempotencyID(rec.IdempotencyKey)); err == nil && old.ExpiresAt.After(now) {
			return false, nil
		}
		rec.Done, rec.Withheld, rec.Status, rec.Headers, rec.Body = false, "", 0, nil, nil
		st.idempotency.put(undo, rec)
		return true, nil
	})
}

func (r idempotencyRecords) Find(ctx context.Context, k ports.IdempotencyKey, now time.Time) (ports.IdempotencyRecord, bool, error) {
	var (
		rec   ports.IdempotencyRecord
		found bool
	)
	err := r.s.read(ctx, func(st *state) error {
		got, err := st.idempotency.get(idempotencyID(k))
		if err == nil && got.ExpiresAt.After(now) {
			rec, found = got, true
		}
		return nil
	})
	return rec, found, err
}

func (r idempotencyRecords) Complete(ctx context.Context, rec ports.IdempotencyRecord) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		stored, err := st.idempotency.get(idempotencyID(rec.IdempotencyKey))
		if err != nil {
			return err
		}
		stored.Done, stored.Withheld, stored.Status = true, rec.Withheld, rec.Status
		stored.Headers, stored.Body = rec.Headers, rec.Body
		st.idempotency.put(undo, stored)
		return nil
	})
}

// CountLive scans the table: the memory store serves tests and small
// deployments, where a team holds few records.
func (r idempotencyRecords) CountLive(ctx context.Context, teamID string, now time.Time) (int, error) {
	return readValue(ctx, r.s, func(st *state) (int, error) {
		n := 0
		for range st.idempotency.scan(func(rec *ports.IdempotencyRecord) bool {
			return rec.TeamID == teamID && rec.ExpiresAt.After(now)
		}, nil) {
			n++
		}
		return n, nil
	})
}

func (r idempotencyRecords) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (int, error) {
		expired := st.idempotency.query(func(rec *ports.IdempotencyRecord) bool { return !rec.ExpiresAt.After(now) }, nil, limit)
		for _, rec := range expired {
			st.idempotency.remove(undo, idempotencyID(rec.IdempotencyKey))
		}
		return len(expired), nil
	})
}

// IdempotencyRecords returns the idempotency records.
func (s *Store) IdempotencyRecords() ports.IdempotencyRecords { return idempotencyRecords{s: s} }
