package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/proxystore"
)

// proxyRow is a proxy with its last check as a JSON object, NULL until
// one is made.
type proxyRow struct {
	bun.BaseModel `bun:"table:proxies,alias:px"`

	ID             string    `bun:"id,pk"`
	TeamID         string    `bun:"team_id"`
	Name           string    `bun:"name"`
	Type           string    `bun:"type"`
	Host           string    `bun:"host"`
	Port           int       `bun:"port"`
	Username       string    `bun:"username"`
	PasswordSealed []byte    `bun:"password_sealed"`
	Status         string    `bun:"status"`
	LastCheck      *string   `bun:"last_check"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
}

// proxyUpdateColumns are what Update replaces.
var proxyUpdateColumns = []string{"name", "type", "host", "port", "username", "password_sealed", "status", "last_check", "updated_at"}

// checkJSON is the stored shape of a proxy's last check.
type checkJSON struct {
	CheckedAt time.Time `json:"checkedAt"`
	OK        bool      `json:"ok"`
	LatencyMs int64     `json:"latencyMs"`
	ExitIP    string    `json:"exitIp"`
	Country   string    `json:"country"`
	City      string    `json:"city"`
	Timezone  string    `json:"timezone"`
	Error     string    `json:"error"`
}

func newProxyRow(p proxy.Proxy) (*proxyRow, error) {
	sealed := p.PasswordSealed
	if sealed == nil {
		// NOT NULL column: no password is stored as no bytes.
		sealed = []byte{}
	}
	row := &proxyRow{ID: p.ID, TeamID: p.TeamID, Name: p.Name, Type: string(p.Type), Host: p.Host, Port: p.Port,
		Username: p.Username, PasswordSealed: sealed, Status: string(p.Status),
		CreatedAt: utc(p.CreatedAt), UpdatedAt: utc(p.UpdatedAt)}
	if c := p.LastCheck; c != nil {
		raw, err := json.Marshal(checkJSON{CheckedAt: utc(c.CheckedAt), OK: c.OK, LatencyMs: c.LatencyMs, ExitIP: c.ExitIP,
			Country: c.Country, City: c.City, Timezone: c.Timezone, Error: c.Error})
		if err != nil {
			return nil, fmt.Errorf("bunstore: write proxy: encode last check: %w", err)
		}
		s := string(raw)
		row.LastCheck = &s
	}
	return row, nil
}

func (r *proxyRow) proxy() (proxy.Proxy, error) {
	p := proxy.Proxy{ID: r.ID, TeamID: r.TeamID, Name: r.Name, Type: proxy.Type(r.Type), Host: r.Host, Port: r.Port,
		Username: r.Username, Status: proxy.Status(r.Status), CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
	if len(r.PasswordSealed) > 0 {
		p.PasswordSealed = r.PasswordSealed
	}
	if r.LastCheck != nil {
		var c checkJSON
		if err := json.Unmarshal([]byte(*r.LastCheck), &c); err != nil {
			return proxy.Proxy{}, fmt.Errorf("bunstore: read proxy %s: decode last check: %w", r.ID, err)
		}
		p.LastCheck = &proxy.Check{CheckedAt: utc(c.CheckedAt), OK: c.OK, LatencyMs: c.LatencyMs, ExitIP: c.ExitIP,
			Country: c.Country, City: c.City, Timezone: c.Timezone, Error: c.Error}
	}
	return p, nil
}

type proxyRepository struct{ db *bun.DB }

func (r proxyRepository) Create(ctx context.Context, p proxy.Proxy) error {
	row, err := newProxyRow(p)
	if err != nil {
		return err
	}
	if _, err := conn(ctx, r.db).NewInsert().Model(row).Exec(ctx); err != nil {
		return writeErr(err, "proxy", "proxy already exists")
	}
	return nil
}

func (r proxyRepository) ByID(ctx context.Context, teamID, id string) (proxy.Proxy, error) {
	var row proxyRow
	err := conn(ctx, r.db).NewSelect().Model(&row).Where("team_id = ?", teamID).Where("id = ?", id).Scan(ctx)
	if err != nil {
		return proxy.Proxy{}, readErr(err, "proxy")
	}
	return row.proxy()
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit".
func (r proxyRepository) List(ctx context.Context, teamID string, f proxystore.Filter) ([]proxy.Proxy, error) {
	if f.Limit < 1 {
		return []proxy.Proxy{}, nil
	}
	var rows []proxyRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).Where("team_id = ?", teamID)
	if f.BeforeID != "" {
		q = q.Where("id < ?", f.BeforeID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if err := q.OrderExpr("id DESC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "proxies")
	}
	out := make([]proxy.Proxy, 0, len(rows))
	for i := range rows {
		p, err := rows[i].proxy()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (r proxyRepository) Count(ctx context.Context, teamID string) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*proxyRow)(nil)).Where("team_id = ?", teamID).Count(ctx)
	if err != nil {
		return 0, readErr(err, "proxies")
	}
	return int(n), nil
}

func (r proxyRepository) Update(ctx context.Context, p proxy.Proxy) error {
	row, err := newProxyRow(p)
	if err != nil {
		return err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).Column(proxyUpdateColumns...).
		Where("team_id = ?", p.TeamID).Where("id = ?", p.ID).Exec(ctx)
	return touchedOne(res, err, "proxy")
}

// Delete removes the proxy in one statement that also finds no profile of
// the team using it; when it removes nothing, a second read says whether
// the proxy was missing or in use.
func (r proxyRepository) Delete(ctx context.Context, teamID, id string) error {
	db := conn(ctx, r.db)
	inUse := db.NewSelect().Model((*profileRow)(nil)).ColumnExpr("1").
		Where("team_id = ?", teamID).Where("proxy_id = ?", id)
	res, err := db.NewDelete().Model((*proxyRow)(nil)).
		Where("team_id = ?", teamID).Where("id = ?", id).
		Where("NOT EXISTS (?)", inUse).Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: write proxy: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if _, err := r.ByID(ctx, teamID, id); err != nil {
		return err
	}
	return proxy.ErrInUse
}

// Proxies returns the proxy repository.
func (s *Store) Proxies() proxystore.Proxies { return proxyRepository{db: s.db} }
