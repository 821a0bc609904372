package memory

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var _ profilestore.Instances = instances{}

type instances struct{ s *Store }

// instanceRowKey keys a row by its node: the registry holds one row per
// NODE_URL, whichever process beat for it last.
func instanceRowKey(i *profilestore.Instance) rowKey { return rowKey{id: i.Node} }

func cloneInstance(i profilestore.Instance) profilestore.Instance {
	i.StartedAt, i.SeenAt = i.StartedAt.UTC(), i.SeenAt.UTC()
	i.GoneAt = utcPtr(i.GoneAt)
	return i
}

// Beat reads and replaces the row under one lock, so the row it returns is
// the one it replaced, as the SQL store's row lock makes it there.
func (r instances) Beat(ctx context.Context, inst profilestore.Instance) (*profilestore.Instance, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (*profilestore.Instance, error) {
		var replaced *profilestore.Instance
		if old, err := st.instances.get(inst.Node); err == nil {
			replaced = &old
		}
		inst.GoneAt = nil
		st.instances.put(undo, inst)
		return replaced, nil
	})
}

func (r instances) List(ctx context.Context) ([]profilestore.Instance, error) {
	return readValue(ctx, r.s, func(st *state) ([]profilestore.Instance, error) {
		return st.instances.query(all, st.instances.lowestIDFirst, unlimited), nil
	})
}

func (r instances) MarkGone(ctx context.Context, node string, seenBy, at time.Time) (bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (bool, error) {
		row, err := st.instances.get(node)
		if err != nil || row.GoneAt != nil || row.SeenAt.After(seenBy) {
			return false, nil
		}
		row.GoneAt = &at
		st.instances.put(undo, row)
		return true, nil
	})
}

func (r instances) Remove(ctx context.Context, node string, seenBy time.Time) (bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (bool, error) {
		row, err := st.instances.get(node)
		if err != nil || row.GoneAt == nil || row.SeenAt.After(seenBy) {
			return false, nil
		}
		st.instances.remove(undo, node)
		return true, nil
	})
}

// Instances returns the fleet's registry.
func (s *Store) Instances() profilestore.Instances { return instances{s: s} }
