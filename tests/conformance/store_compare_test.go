package conformance

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// comparedLease and comparedEntity stand for a domain entity that has grown
// fields no check names: an exported one, an unexported one, and state
// behind pointers, slices, maps and interfaces.
type comparedLease struct {
	ID        string
	ExpiresAt time.Time
}

type comparedEntity struct {
	ID      string
	At      time.Time
	Hash    []byte
	Data    json.RawMessage
	Tags    []string
	Labels  map[string]int
	Lease   *comparedLease
	History []comparedLease
	Extra   string
	Detail  any
	version int
	touched time.Time
}

func comparedValue() comparedEntity {
	return comparedEntity{
		ID:      "ent_1",
		At:      storeAt(0),
		Hash:    storeHash(5),
		Data:    json.RawMessage(`{"zeta":1, "alpha":2}`),
		Tags:    []string{"b", "a"},
		Labels:  map[string]int{"x": 1, "y": 2},
		Lease:   &comparedLease{ID: "lease_1", ExpiresAt: storeAt(time.Hour)},
		History: []comparedLease{{ID: "lease_0", ExpiresAt: storeAt(-time.Hour)}},
		Extra:   "extra",
		Detail:  comparedLease{ID: "detail", ExpiresAt: storeAt(time.Minute)},
		version: 3,
		touched: storeAt(time.Second),
	}
}

func TestCompareStored(t *testing.T) {
	for _, c := range []struct {
		name string
		// change turns copies of one value into what a store returned and
		// what was written.
		change func(got, want *comparedEntity)
		// want lists the paths that must be reported, and no others.
		want []string
	}{
		{"equal values pass", func(_, _ *comparedEntity) {}, nil},
		{"times written in another zone pass when read back in UTC", func(got, _ *comparedEntity) {
			got.At = got.At.In(storeZone).UTC()
		}, nil},
		{"times within the precision pass", func(got, _ *comparedEntity) {
			got.At = got.At.Truncate(storeTimePrecision)
			got.Lease.ExpiresAt = got.Lease.ExpiresAt.Add(storeTimePrecision - time.Nanosecond)
			got.touched = got.touched.Round(storeTimePrecision)
		}, nil},
		{"nil and empty slices and maps are equal", func(got, want *comparedEntity) {
			got.Tags, got.Labels, got.History, got.Hash, got.Data = []string{}, map[string]int{}, nil, []byte{}, nil
			want.Tags, want.Labels, want.History, want.Hash, want.Data = nil, nil, []comparedLease{}, nil, json.RawMessage{}
		}, nil},
		{"a differing exported field no check names", func(got, _ *comparedEntity) {
			got.Extra = "changed"
		}, []string{"entity.Extra"}},
		{"a differing unexported field", func(got, _ *comparedEntity) {
			got.version = 4
		}, []string{"entity.version"}},
		{"an unexported time off by the precision", func(got, _ *comparedEntity) {
			got.touched = got.touched.Add(storeTimePrecision)
		}, []string{"entity.touched"}},
		{"a time off by more than the precision", func(got, _ *comparedEntity) {
			got.Lease.ExpiresAt = got.Lease.ExpiresAt.Add(-2 * storeTimePrecision)
		}, []string{"entity.Lease.ExpiresAt"}},
		{"a time in another zone", func(got, _ *comparedEntity) {
			got.At = got.At.In(storeZone)
			got.History[0].ExpiresAt = got.History[0].ExpiresAt.Local()
		}, []string{"entity.At", "entity.History[0].ExpiresAt"}},
		{"bytes differ by one byte", func(got, _ *comparedEntity) {
			got.Hash[31]++
		}, []string{"entity.Hash"}},
		{"JSON re-encoded to the same document", func(got, _ *comparedEntity) {
			got.Data = json.RawMessage(`{"alpha":2,"zeta":1}`)
		}, []string{"entity.Data"}},
		{"slices of other lengths and elements in another order", func(got, _ *comparedEntity) {
			got.Tags = []string{"a", "b"}
			got.History = append(got.History, comparedLease{})
		}, []string{"entity.Tags[0]", "entity.Tags[1]", "entity.History"}},
		{"map entries missing, extra and changed", func(got, _ *comparedEntity) {
			got.Labels = map[string]int{"x": 2, "z": 1}
		}, []string{`entity.Labels["x"]`, `entity.Labels["y"]`, `entity.Labels["z"]`}},
		{"a pointer read back nil", func(got, _ *comparedEntity) {
			got.Lease = nil
		}, []string{"entity.Lease"}},
		{"state behind an interface", func(got, _ *comparedEntity) {
			got.Detail = comparedLease{ID: "other", ExpiresAt: storeAt(time.Minute).In(storeZone)}
		}, []string{"entity.Detail.ID", "entity.Detail.ExpiresAt"}},
		{"another type behind an interface", func(got, _ *comparedEntity) {
			got.Detail = &comparedLease{ID: "detail", ExpiresAt: storeAt(time.Minute)}
		}, []string{"entity.Detail"}},
		{"every differing field is reported", func(got, _ *comparedEntity) {
			got.ID, got.Extra, got.version = "ent_2", "changed", 0
			got.Lease.ID = "lease_2"
		}, []string{"entity.ID", "entity.Lease.ID", "entity.Extra", "entity.version"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := comparedValue()
			got := comparedValue()
			c.change(&got, &want)
			diffs := storageDiff("entity", got, want)
			paths := make([]string, len(diffs))
			for i, d := range diffs {
				paths[i], _, _ = strings.Cut(d, ": ")
			}
			if !slices.Equal(paths, c.want) {
				t.Errorf("reported paths %q, want %q; reports:\n%s", paths, c.want, strings.Join(diffs, "\n"))
			}
		})
	}
}

// TestCompareStoredReports checks that a report says what differs, not only
// where.
func TestCompareStoredReports(t *testing.T) {
	want := comparedValue()
	got := comparedValue()
	got.At = got.At.Add(time.Hour).In(storeZone)
	got.Extra = "changed"
	diffs := storageDiff("entity", got, want)
	for _, w := range []string{
		"entity.At: location UTC+05:30, want UTC",
		"entity.At: got 2031-03-14 21:39:26.535897932 +0530 UTC+05:30, want 2031-03-14 15:09:26.535897932 +0000 UTC (within 1ms)",
		`entity.Extra: got "changed", want "extra"`,
	} {
		if !slices.Contains(diffs, w) {
			t.Errorf("no report %q among:\n%s", w, strings.Join(diffs, "\n"))
		}
	}
}
