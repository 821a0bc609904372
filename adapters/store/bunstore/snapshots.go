package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

// snapshotRow is a snapshot with its fingerprint in columns of its own and
// its device column, as profiles have them, the proxy as it looked in the proxy_ref columns (all
// NULL when none is shown) and its tags as a JSON array in their order.
type snapshotRow struct {
	bun.BaseModel `bun:"table:snapshots,alias:sn"`

	ID           string    `bun:"id,pk"`
	TeamID       string    `bun:"team_id"`
	ProfileID    string    `bun:"profile_id"`
	Label        string    `bun:"label"`
	Kind         string    `bun:"kind"`
	Name         string    `bun:"name"`
	TemplateID   string    `bun:"template_id"`
	Browser      string    `bun:"browser"`
	UserAgent    string    `bun:"user_agent"`
	Platform     string    `bun:"platform"`
	Locale       string    `bun:"locale"`
	Timezone     string    `bun:"timezone"`
	ScreenWidth  int       `bun:"screen_width"`
	ScreenHeight int       `bun:"screen_height"`
	Device       string    `bun:"device,notnull"`
	ProxyID      string    `bun:"proxy_id,nullzero"` // "" (no proxy) is NULL
	ProxyRefID   *string   `bun:"proxy_ref_id"`
	ProxyRefType *string   `bun:"proxy_ref_type"`
	ProxyRefHost *string   `bun:"proxy_ref_host"`
	ProxyRefPort *int      `bun:"proxy_ref_port"`
	Tags         string    `bun:"tags"`
	Notes        string    `bun:"notes"`
	DataSHA256   *string   `bun:"data_sha256"`
	DataSize     *int64    `bun:"data_size"`
	CookiesSHA   *string   `bun:"cookies_sha256"`
	CookiesSize  *int64    `bun:"cookies_size"`
	CreatedBy    string    `bun:"created_by"`
	CreatedAt    time.Time `bun:"created_at"`
}

func newSnapshotRow(s snapshot.Snapshot) (*snapshotRow, error) {
	st := s.Settings
	tags := st.Tags
	if tags == nil {
		tags = []string{}
	}
	rawTags, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write snapshot: encode tags: %w", err)
	}
	row := &snapshotRow{
		ID: s.ID, TeamID: s.TeamID, ProfileID: s.ProfileID, Label: s.Label, Kind: string(s.Kind),
		Name: st.Name, TemplateID: st.TemplateID, Browser: st.Browser,
		UserAgent: st.Fingerprint.UserAgent, Platform: st.Fingerprint.Platform,
		Locale: st.Fingerprint.Locale, Timezone: st.Fingerprint.Timezone,
		ScreenWidth: st.Fingerprint.Screen.Width, ScreenHeight: st.Fingerprint.Screen.Height,
		Device:  deviceJSON(st.Fingerprint),
		ProxyID: st.ProxyID, Tags: string(rawTags), Notes: st.Notes,
		CreatedBy: s.CreatedBy, CreatedAt: utc(s.CreatedAt),
	}
	if ref := st.Proxy; ref != nil {
		id, typ, host, port := ref.ID, ref.Type, ref.Host, ref.Port
		row.ProxyRefID, row.ProxyRefType, row.ProxyRefHost, row.ProxyRefPort = &id, &typ, &host, &port
	}
	row.DataSHA256, row.DataSize = contentColumns(s.Data)
	row.CookiesSHA, row.CookiesSize = contentColumns(s.Cookies)
	return row, nil
}

func (r *snapshotRow) snapshot() (snapshot.Snapshot, error) {
	var tags []string
	if err := json.Unmarshal([]byte(r.Tags), &tags); err != nil {
		return snapshot.Snapshot{}, fmt.Errorf("bunstore: read snapshot %s: decode tags: %w", r.ID, err)
	}
	if tags == nil {
		tags = []string{}
	}
	// A snapshot taken before the device column existed gets the device
	// its profile gets (it is seeded by the profile's id).
	fp, err := withDevice(profile.Fingerprint{
		UserAgent: r.UserAgent, Platform: r.Platform, Locale: r.Locale, Timezone: r.Timezone,
		Screen: profile.Screen{Width: r.ScreenWidth, Height: r.ScreenHeight},
	}, r.Device, r.TemplateID, r.ProfileID)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	s := snapshot.Snapshot{
		ID: r.ID, TeamID: r.TeamID, ProfileID: r.ProfileID, Label: r.Label, Kind: snapshot.Kind(r.Kind),
		Settings: snapshot.Settings{
			Name: r.Name, TemplateID: r.TemplateID, Browser: r.Browser, Fingerprint: fp,
			ProxyID: r.ProxyID, Tags: tags, Notes: r.Notes,
		},
		Data:      content(r.DataSHA256, r.DataSize),
		Cookies:   content(r.CookiesSHA, r.CookiesSize),
		CreatedBy: r.CreatedBy,
		CreatedAt: utc(r.CreatedAt),
	}
	if r.ProxyRefID != nil {
		ref := &profile.ProxyRef{ID: *r.ProxyRefID}
		if r.ProxyRefType != nil {
			ref.Type = *r.ProxyRefType
		}
		if r.ProxyRefHost != nil {
			ref.Host = *r.ProxyRefHost
		}
		if r.ProxyRefPort != nil {
			ref.Port = *r.ProxyRefPort
		}
		s.Settings.Proxy = ref
	}
	return s, nil
}

// snapshotsOf converts rows, newest (highest id) first whatever order the
// database returned them in.
func snapshotsOf(rows []snapshotRow) ([]snapshot.Snapshot, error) {
	out := make([]snapshot.Snapshot, 0, len(rows))
	for i := range rows {
		s, err := rows[i].snapshot()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b snapshot.Snapshot) int { return strings.Compare(b.ID, a.ID) })
	return out, nil
}

type snapshotRepository struct{ db *bun.DB }

func (r snapshotRepository) Create(ctx context.Context, s snapshot.Snapshot) error {
	row, err := newSnapshotRow(s)
	if err != nil {
		return err
	}
	if _, err := conn(ctx, r.db).NewInsert().Model(row).Exec(ctx); err != nil {
		return writeErr(err, "snapshot", "snapshot already exists")
	}
	return nil
}

func (r snapshotRepository) ByID(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error) {
	var row snapshotRow
	err := conn(ctx, r.db).NewSelect().Model(&row).
		Where("team_id = ?", teamID).Where("profile_id = ?", profileID).Where("id = ?", id).
		Scan(ctx)
	if err != nil {
		return snapshot.Snapshot{}, readErr(err, "snapshot")
	}
	return row.snapshot()
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit".
func (r snapshotRepository) List(ctx context.Context, teamID, profileID string, f snapshotstore.Filter) ([]snapshot.Snapshot, error) {
	if f.Limit < 1 {
		return []snapshot.Snapshot{}, nil
	}
	var rows []snapshotRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).Where("team_id = ?", teamID).Where("profile_id = ?", profileID)
	if f.BeforeID != "" {
		q = q.Where("id < ?", f.BeforeID)
	}
	if err := q.OrderExpr("id DESC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "snapshots")
	}
	return snapshotsOf(rows)
}

// Delete, Prune and DeleteAll return what their DELETE removed (RETURNING),
// so that of two concurrent callers only one returns a snapshot.
func (r snapshotRepository) Delete(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error) {
	removed, err := r.deleteWhere(ctx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("team_id = ?", teamID).Where("profile_id = ?", profileID).Where("id = ?", id)
	})
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	if len(removed) == 0 {
		return snapshot.Snapshot{}, domain.NotFound("snapshot")
	}
	return removed[0], nil
}

// Prune deletes the snapshots older than the keep-th newest; a keep below
// one deletes them all.
func (r snapshotRepository) Prune(ctx context.Context, teamID, profileID string, keep int) ([]snapshot.Snapshot, error) {
	if keep < 1 {
		return r.DeleteAll(ctx, teamID, profileID)
	}
	db := conn(ctx, r.db)
	oldestKept := db.NewSelect().Model((*snapshotRow)(nil)).Column("id").
		Where("team_id = ?", teamID).Where("profile_id = ?", profileID).
		OrderExpr("id DESC").Limit(1).Offset(int64(keep - 1))
	return r.deleteWhere(ctx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("team_id = ?", teamID).Where("profile_id = ?", profileID).Where("id < (?)", oldestKept)
	})
}

func (r snapshotRepository) DeleteAll(ctx context.Context, teamID, profileID string) ([]snapshot.Snapshot, error) {
	return r.deleteWhere(ctx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("team_id = ?", teamID).Where("profile_id = ?", profileID)
	})
}

func (r snapshotRepository) deleteWhere(ctx context.Context, where func(*bun.DeleteQuery) *bun.DeleteQuery) ([]snapshot.Snapshot, error) {
	var rows []snapshotRow
	q := where(conn(ctx, r.db).NewDelete().Model(&rows)).Returning("*")
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("bunstore: write snapshots: %w", err)
	}
	return snapshotsOf(rows)
}

// Snapshots returns the snapshot repository.
func (s *Store) Snapshots() snapshotstore.Snapshots { return snapshotRepository{db: s.db} }
