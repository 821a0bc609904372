package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// webhookEndpointRow is an endpoint with its event types as a JSON array of
// text, kept in the order the endpoint lists them.
type webhookEndpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints,alias:we"`

	ID           string    `bun:"id,pk"`
	TeamID       string    `bun:"team_id"`
	URL          string    `bun:"url"`
	Events       string    `bun:"events"`
	SecretSealed []byte    `bun:"secret_sealed"`
	Enabled      bool      `bun:"enabled"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
	MaxInFlight  int       `bun:"max_in_flight"`
	RateLimit    int       `bun:"rate_limit"`
}

// webhookEndpointUpdateColumns are what Update replaces.
var webhookEndpointUpdateColumns = []string{
	"url", "events", "secret_sealed", "enabled", "updated_at", "max_in_flight", "rate_limit",
}

func newWebhookEndpointRow(e webhook.Endpoint) (*webhookEndpointRow, error) {
	events := e.Events
	if events == nil {
		events = []string{}
	}
	raw, err := json.Marshal(events)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write webhook endpoint: encode events: %w", err)
	}
	secret := e.SecretSealed
	if secret == nil {
		// NOT NULL column: no secret is stored as no bytes.
		secret = []byte{}
	}
	return &webhookEndpointRow{
		ID:           e.ID,
		TeamID:       e.TeamID,
		URL:          e.URL,
		Events:       string(raw),
		SecretSealed: secret,
		Enabled:      e.Enabled,
		CreatedAt:    utc(e.CreatedAt),
		UpdatedAt:    utc(e.UpdatedAt),
		MaxInFlight:  e.MaxInFlight,
		RateLimit:    e.RateLimit,
	}, nil
}

func (r *webhookEndpointRow) endpoint() (webhook.Endpoint, error) {
	events := []string{}
	if err := json.Unmarshal([]byte(r.Events), &events); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("bunstore: read webhook endpoint %s: decode events: %w", r.ID, err)
	}
	if events == nil {
		events = []string{}
	}
	return webhook.Endpoint{
		ID:           r.ID,
		TeamID:       r.TeamID,
		URL:          r.URL,
		Events:       events,
		SecretSealed: r.SecretSealed,
		Enabled:      r.Enabled,
		CreatedAt:    utc(r.CreatedAt),
		UpdatedAt:    utc(r.UpdatedAt),
		MaxInFlight:  r.MaxInFlight,
		RateLimit:    r.RateLimit,
	}, nil
}

func webhookEndpoints(rows []webhookEndpointRow) ([]webhook.Endpoint, error) {
	out := make([]webhook.Endpoint, 0, len(rows))
	for i := range rows {
		e, err := rows[i].endpoint()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

type webhookEndpointRepository struct{ db *bun.DB }

func (r webhookEndpointRepository) Create(ctx context.Context, e webhook.Endpoint) error {
	row, err := newWebhookEndpointRow(e)
	if err != nil {
		return err
	}
	_, err = conn(ctx, r.db).NewInsert().Model(row).Exec(ctx)
	if err != nil {
		return writeErr(err, "webhook endpoint", "webhook endpoint already exists")
	}
	return nil
}

func (r webhookEndpointRepository) ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error) {
	var row webhookEndpointRow
	err := conn(ctx, r.db).NewSelect().Model(&row).
		Where("team_id = ?", teamID).
		Where("id = ?", id).
		Scan(ctx)
	if err != nil {
		return webhook.Endpoint{}, readErr(err, "webhook endpoint")
	}
	return row.endpoint()
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit".
func (r webhookEndpointRepository) List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error) {
	if limit < 1 {
		return []webhook.Endpoint{}, nil
	}
	var rows []webhookEndpointRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).Where("team_id = ?", teamID)
	if beforeID != "" {
		q = q.Where("id < ?", beforeID)
	}
	if err := q.OrderExpr("id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "webhook endpoints")
	}
	return webhookEndpoints(rows)
}

func (r webhookEndpointRepository) Count(ctx context.Context, teamID string) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*webhookEndpointRow)(nil)).Where("team_id = ?", teamID).Count(ctx)
	if err != nil {
		return 0, readErr(err, "webhook endpoints")
	}
	return int(n), nil
}

// ListEnabled returns the endpoints in id order, oldest first.
func (r webhookEndpointRepository) ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
	var rows []webhookEndpointRow
	err := conn(ctx, r.db).NewSelect().Model(&rows).
		Where("team_id = ?", teamID).
		Where("enabled = ?", true).
		OrderExpr("id ASC").
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "webhook endpoints")
	}
	return webhookEndpoints(rows)
}

func (r webhookEndpointRepository) Update(ctx context.Context, e webhook.Endpoint) error {
	row, err := newWebhookEndpointRow(e)
	if err != nil {
		return err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).
		Column(webhookEndpointUpdateColumns...).
		Where("team_id = ?", e.TeamID).
		Where("id = ?", e.ID).
		Exec(ctx)
	return touchedOne(res, err, "webhook endpoint")
}

// Delete removes the endpoint and its deliveries together: in a transaction
// of its own, or in the caller's unit of work.
func (r webhookEndpointRepository) Delete(ctx context.Context, teamID, id string) error {
	return inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*webhookEndpointRow)(nil)).
			Where("team_id = ?", teamID).
			Where("id = ?", id).
			Exec(ctx)
		if err := touchedOne(res, err, "webhook endpoint"); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*webhookDeliveryRow)(nil)).
			Where("team_id = ?", teamID).
			Where("endpoint_id = ?", id).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("bunstore: write deliveries: %w", err)
		}
		return nil
	})
}

// WebhookEndpoints returns the webhook endpoint repository.
func (s *Store) WebhookEndpoints() webhookstore.Endpoints { return webhookEndpointRepository{db: s.db} }
