package wiring

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/application/idempotency"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Idempotency provides the Idempotency-Key service over the primary store,
// and the unit of work every module writes in, which claims a request's key
// with the request's effect.
var Idempotency = fx.Options(
	fx.Provide(
		func(s storage.Store, c ports.Clock, log *slog.Logger, cfg config.Config) *idempotency.Service {
			return idempotency.New(idempotency.Deps{
				Records: s.IdempotencyRecords(), Clock: c, Log: log,
				Limits: idempotency.Limits{KeysPerTeam: cfg.IdempotencyKeysPerTeam, MaxResponseBytes: cfg.IdempotencyMaxResponseBytes},
			})
		},
		func(s storage.Store, claims *idempotency.Service) ports.UnitOfWork { return unit.New(s, claims) },
	),
)
