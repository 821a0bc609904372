package wiring

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/application/idempotency"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// Idempotency provides the Idempotency-Key service over the primary store,
// and decorates the store so that every module's units of work insert a
// request's claim of its key with the request's effect.
var Idempotency = fx.Options(
	fx.Provide(func(s storage.Store, c ports.Clock, log *slog.Logger, cfg config.Config) *idempotency.Service {
		return idempotency.New(idempotency.Deps{
			Records: s.IdempotencyRecords(), Clock: c, Log: log,
			Limits: idempotency.Limits{KeysPerTeam: cfg.IdempotencyKeysPerTeam, MaxResponseBytes: cfg.IdempotencyMaxResponseBytes},
		})
	}),
	// At the root, so the store (and the unit of work taken from it) every
	// module sees is the claiming one.
	fx.Decorate(func(s storage.Store) storage.Store {
		return claimingStore{Store: s, tx: idempotency.Units(s, s.IdempotencyRecords())}
	}),
)

// claimingStore is a store whose units insert a request's pending claim, and
// whose writes that use cases make outside any unit (creating an API key, a
// webhook endpoint or a test delivery, requeueing a delivery, a heartbeat)
// run in such a unit when the request carries a claim, so that they too
// keep their record.
type claimingStore struct {
	storage.Store
	tx ports.UnitOfWork
}

// Unwrap returns the store underneath, for the pieces of wiring that need
// the adapter itself (the PostgreSQL blob store shares its database).
func (s claimingStore) Unwrap() storage.Store { return s.Store }

func (s claimingStore) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.tx.Do(ctx, fn)
}

func (s claimingStore) APIKeys() accountstore.APIKeys {
	return claimingAPIKeys{APIKeys: s.Store.APIKeys(), tx: s.tx}
}

func (s claimingStore) WebhookEndpoints() webhookstore.Endpoints {
	return claimingEndpoints{Endpoints: s.Store.WebhookEndpoints(), tx: s.tx}
}

func (s claimingStore) Deliveries() webhookstore.Deliveries {
	return claimingDeliveries{Deliveries: s.Store.Deliveries(), tx: s.tx}
}

func (s claimingStore) Profiles() profilestore.Profiles {
	return claimingProfiles{Profiles: s.Store.Profiles(), tx: s.tx}
}

type claimingAPIKeys struct {
	accountstore.APIKeys
	tx ports.UnitOfWork
}

func (r claimingAPIKeys) Create(ctx context.Context, k account.APIKey) error {
	return idempotency.Effect(ctx, r.tx, func(ctx context.Context) error { return r.APIKeys.Create(ctx, k) })
}

type claimingEndpoints struct {
	webhookstore.Endpoints
	tx ports.UnitOfWork
}

func (r claimingEndpoints) Create(ctx context.Context, e webhook.Endpoint) error {
	return idempotency.Effect(ctx, r.tx, func(ctx context.Context) error { return r.Endpoints.Create(ctx, e) })
}

type claimingDeliveries struct {
	webhookstore.Deliveries
	tx ports.UnitOfWork
}

func (r claimingDeliveries) Create(ctx context.Context, ds ...webhook.Delivery) error {
	return idempotency.Effect(ctx, r.tx, func(ctx context.Context) error { return r.Deliveries.Create(ctx, ds...) })
}

func (r claimingDeliveries) Requeue(ctx context.Context, d webhook.Delivery) (bool, error) {
	var ok bool
	err := idempotency.Effect(ctx, r.tx, func(ctx context.Context) error {
		var err error
		ok, err = r.Deliveries.Requeue(ctx, d)
		return err
	})
	return ok, err
}

type claimingProfiles struct {
	profilestore.Profiles
	tx ports.UnitOfWork
}

func (r claimingProfiles) SwapSession(ctx context.Context, teamID, id string, swap profilestore.SessionSwap) (bool, error) {
	var ok bool
	err := idempotency.Effect(ctx, r.tx, func(ctx context.Context) error {
		var err error
		ok, err = r.Profiles.SwapSession(ctx, teamID, id, swap)
		return err
	})
	return ok, err
}
