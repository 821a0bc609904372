package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var _ profilestore.Instances = instanceRepository{}

// instanceRow is one instance of the fleet's registry, keyed by its node.
type instanceRow struct {
	bun.BaseModel `bun:"table:instances,alias:ins"`

	Node      string     `bun:"node,pk"`
	ID        string     `bun:"id"`
	Capacity  int        `bun:"capacity"`
	Running   int        `bun:"running"`
	Draining  bool       `bun:"draining"`
	Version   string     `bun:"version"`
	Engine    string     `bun:"engine"`
	StartedAt time.Time  `bun:"started_at"`
	SeenAt    time.Time  `bun:"seen_at"`
	GoneAt    *time.Time `bun:"gone_at"`
}

// instanceBeatColumns are what a beat replaces: everything but the key.
var instanceBeatColumns = []string{
	"id", "capacity", "running", "draining", "version", "engine", "started_at", "seen_at", "gone_at",
}

func newInstanceRow(i profilestore.Instance) *instanceRow {
	return &instanceRow{
		Node: i.Node, ID: i.ID, Capacity: i.Capacity, Running: i.Running, Draining: i.Draining,
		Version: i.Version, Engine: i.Engine,
		StartedAt: utc(i.StartedAt), SeenAt: utc(i.SeenAt), GoneAt: utcPtr(i.GoneAt),
	}
}

func (r *instanceRow) instance() profilestore.Instance {
	return profilestore.Instance{
		Node: r.Node, ID: r.ID, Capacity: r.Capacity, Running: r.Running, Draining: r.Draining,
		Version: r.Version, Engine: r.Engine,
		StartedAt: utc(r.StartedAt), SeenAt: utc(r.SeenAt), GoneAt: utcPtr(r.GoneAt),
	}
}

type instanceRepository struct{ db *bun.DB }

// beatAttempts bounds Beat's retries: each one needs another transaction to
// have inserted or removed the node's row in between, which a fleet whose
// nodes each beat from one process never sees twice in a row.
const beatAttempts = 3

// Beat reads the node's row and writes it back in one transaction, so
// that the row it returns is the one it replaced: on PostgreSQL the read
// locks the row, so a concurrent beat of the same node waits for this one
// and returns this one's row; SQLite runs one writer at a time. A node
// with no row to lock is inserted with ON CONFLICT DO NOTHING, which waits
// for a concurrent insert of it instead of failing (and, in a unit,
// aborting) the transaction; the row that insert committed is then read and
// replaced.
func (r instanceRepository) Beat(ctx context.Context, inst profilestore.Instance) (*profilestore.Instance, error) {
	inst.GoneAt = nil
	row := newInstanceRow(inst)
	var replaced *profilestore.Instance
	err := inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		for range beatAttempts {
			old, err := lockInstance(ctx, tx, inst.Node)
			if err != nil {
				return err
			}
			if old != nil {
				if _, err = tx.NewUpdate().Model(row).Column(instanceBeatColumns...).WherePK().Exec(ctx); err != nil {
					return fmt.Errorf("bunstore: write instance: %w", err)
				}
				replaced = old
				return nil
			}
			res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
			inserted, err := rowsAffected(res, err, "instance")
			if err != nil || inserted == 1 {
				return err
			}
		}
		return fmt.Errorf("bunstore: write instance %s: its row changed under each of %d attempts", inst.Node, beatAttempts)
	})
	if err != nil {
		return nil, err
	}
	return replaced, nil
}

// lockInstance reads node's row (nil if there is none), locked until tx
// ends on PostgreSQL.
func lockInstance(ctx context.Context, tx bun.Tx, node string) (*profilestore.Instance, error) {
	var row instanceRow
	q := tx.NewSelect().Model(&row).Where("node = ?", node)
	if tx.Dialect().Name() == dialect.PG {
		q = q.For("UPDATE")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, readErr(err, "instance")
	}
	inst := row.instance()
	return &inst, nil
}

func (r instanceRepository) List(ctx context.Context) ([]profilestore.Instance, error) {
	var rows []instanceRow
	if err := conn(ctx, r.db).NewSelect().Model(&rows).OrderExpr("node ASC").Scan(ctx); err != nil {
		return nil, readErr(err, "instances")
	}
	out := make([]profilestore.Instance, len(rows))
	for i := range rows {
		out[i] = rows[i].instance()
	}
	return out, nil
}

// MarkGone is one conditional UPDATE: on PostgreSQL a concurrent call
// waits for the row and re-checks gone_at once the other commits, so only
// one of them marks it; SQLite runs one writer at a time.
func (r instanceRepository) MarkGone(ctx context.Context, node string, seenBy, at time.Time) (bool, error) {
	res, err := conn(ctx, r.db).NewUpdate().Model((*instanceRow)(nil)).
		Set("gone_at = ?", utc(at)).
		Where("node = ?", node).
		Where("gone_at IS NULL").
		Where("seen_at <= ?", utc(seenBy)).
		Exec(ctx)
	n, err := rowsAffected(res, err, "instance")
	return n == 1, err
}

// Remove is one conditional DELETE, so a node that beat again after it was
// found gone keeps its row.
func (r instanceRepository) Remove(ctx context.Context, node string, seenBy time.Time) (bool, error) {
	res, err := conn(ctx, r.db).NewDelete().Model((*instanceRow)(nil)).
		Where("node = ?", node).
		Where("gone_at IS NOT NULL").
		Where("seen_at <= ?", utc(seenBy)).
		Exec(ctx)
	n, err := rowsAffected(res, err, "instance")
	return n == 1, err
}

// Instances returns the fleet's registry.
func (s *Store) Instances() profilestore.Instances { return instanceRepository{db: s.db} }
