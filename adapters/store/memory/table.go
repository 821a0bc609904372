package memory

import (
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/profilesvc/profilesvc/domain"
)

// rowKey is what a table needs to know of a row: its id and, for a row that
// belongs to a team, the team's id ("" for users, teams and tokens).
type rowKey struct{ id, teamID string }

// unlimited is the limit of a query that wants every matching row.
const unlimited = math.MaxInt

// table holds one kind of row by id, like a database table with only its
// primary key: other lookups scan it. A row goes in and comes out as a
// clone, so no caller can change a stored row (and the undo log's copy of it)
// through a slice or pointer it shares. Rows are held by pointer so that a
// scan sorts pointers, not whole rows; a write replaces the pointer.
type table[T any] struct {
	name  string // as in "user not found"
	rows  map[string]*T
	key   func(*T) rowKey
	clone func(T) T
	// waiting, when set, selects the rows kept in backlog, like a partial
	// index in SQL: see withBacklog.
	waiting func(*T) bool
	backlog map[string]struct{}
}

func newTable[T any](name string, key func(*T) rowKey, clone func(T) T) table[T] {
	return table[T]{name: name, rows: map[string]*T{}, key: key, clone: clone}
}

// withBacklog keeps the ids of the rows waiting accepts apart, for a table
// that a poller drains (pending deliveries), so that a poll costs what is
// waiting rather than every row ever written:
// without it the memory benchmarks of webhook delivery and of launching
// profiles ran markedly slower, as the webhook pipeline polls on every
// commit.
func (t table[T]) withBacklog(waiting func(*T) bool) table[T] {
	t.waiting, t.backlog = waiting, map[string]struct{}{}
	return t
}

// insert stores a new row; an id already taken is a conflict.
func (t *table[T]) insert(undo *undoLog, v T) error {
	if _, taken := t.rows[t.key(&v).id]; taken {
		return domain.Conflict(t.name + " id already taken")
	}
	t.put(undo, v)
	return nil
}

// put stores v in place of the row with its id.
func (t *table[T]) put(undo *undoLog, v T) {
	stored := t.clone(v)
	t.set(undo, t.key(&stored).id, &stored)
}

func (t *table[T]) remove(undo *undoLog, id string) {
	if _, had := t.rows[id]; had {
		t.set(undo, id, nil)
	}
}

// set makes v the row of id (nil: none). Undoing sets the old row back the
// same way, so the backlog follows the row it describes.
func (t *table[T]) set(undo *undoLog, id string, v *T) {
	old := t.rows[id]
	undo.record(func() { t.set(nil, id, old) })
	if v == nil {
		delete(t.rows, id)
	} else {
		t.rows[id] = v
	}
	if t.waiting == nil {
		return
	}
	if v != nil && t.waiting(v) {
		t.backlog[id] = struct{}{}
	} else {
		delete(t.backlog, id)
	}
}

func (t *table[T]) get(id string) (T, error) {
	v, ok := t.rows[id]
	if !ok {
		var zero T
		return zero, domain.NotFound(t.name)
	}
	return t.clone(*v), nil
}

// inTeam is get for a row that belongs to a team: another team's row is not
// found, so a caller cannot learn that an id exists elsewhere.
func (t *table[T]) inTeam(teamID, id string) (T, error) {
	v, ok := t.rows[id]
	if !ok || t.key(v).teamID != teamID {
		var zero T
		return zero, domain.NotFound(t.name)
	}
	return t.clone(*v), nil
}

// find returns the row keep accepts, for lookups by a column that a rule
// keeps unique; not found when none does.
func (t *table[T]) find(keep func(*T) bool) (T, error) {
	for _, v := range t.rows {
		if keep(v) {
			return t.clone(*v), nil
		}
	}
	var zero T
	return zero, domain.NotFound(t.name)
}

// exists reports whether keep accepts a row, without copying one.
func (t *table[T]) exists(keep func(*T) bool) bool {
	for _, v := range t.rows {
		if keep(v) {
			return true
		}
	}
	return false
}

// scan yields the rows keep accepts, ordered by order (nil: in no
// particular order), as stored: like keep, the caller only reads them, and
// clones one it stores or hands out (take does). It suits a caller that
// reads many rows and keeps few. Writes during the scan do not change what
// it yields.
func (t *table[T]) scan(keep func(*T) bool, order func(a, b *T) int) iter.Seq[T] {
	return sorted(maps.Values(t.rows), keep, order)
}

// scanBacklog is scan over the rows in the backlog alone.
func (t *table[T]) scanBacklog(keep func(*T) bool, order func(a, b *T) int) iter.Seq[T] {
	waiting := func(yield func(*T) bool) {
		for id := range t.backlog {
			if !yield(t.rows[id]) {
				return
			}
		}
	}
	return sorted(waiting, keep, order)
}

func sorted[T any](rows iter.Seq[*T], keep func(*T) bool, order func(a, b *T) int) iter.Seq[T] {
	return func(yield func(T) bool) {
		var kept []*T
		for v := range rows {
			if keep(v) {
				kept = append(kept, v)
			}
		}
		if order != nil {
			slices.SortFunc(kept, order)
		}
		for _, v := range kept {
			if !yield(*v) {
				return
			}
		}
	}
}

// take returns clones of the first limit rows. A limit below one returns
// none, so that a caller that computed a bad limit gets nothing rather than
// the whole table.
func (t *table[T]) take(rows iter.Seq[T], limit int) []T {
	out := []T{}
	if limit < 1 {
		return out
	}
	for v := range rows {
		out = append(out, t.clone(v))
		if len(out) == limit {
			break
		}
	}
	return out
}

// query returns clones of up to limit rows keep accepts, ordered by order
// (nil: in no particular order).
func (t *table[T]) query(keep func(*T) bool, order func(a, b *T) int, limit int) []T {
	return t.take(t.scan(keep, order), limit)
}

// pageDown is the paging of every List: up to limit rows of the team that
// keep accepts, with an id below beforeID ("" for no bound), highest id
// (newest) first. The id is the cursor, so a page never repeats or skips a
// row when rows are added above it.
func (t *table[T]) pageDown(teamID, beforeID string, limit int, keep func(*T) bool) []T {
	return t.query(func(v *T) bool {
		k := t.key(v)
		return k.teamID == teamID && (beforeID == "" || k.id < beforeID) && keep(v)
	}, t.highestIDFirst, limit)
}

func (t *table[T]) lowestIDFirst(a, b *T) int {
	return strings.Compare(t.key(a).id, t.key(b).id)
}

func (t *table[T]) highestIDFirst(a, b *T) int {
	return strings.Compare(t.key(b).id, t.key(a).id)
}

// all accepts every row.
func all[T any](*T) bool { return true }

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
