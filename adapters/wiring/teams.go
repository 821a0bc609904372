package wiring

import (
	"log/slog"

	"go.uber.org/fx"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// TeamDeps are the ports of the team use cases.
type TeamDeps struct {
	fx.In
	Store  storage.Store
	Tx     ports.UnitOfWork
	Outbox ports.Outbox
	Mailer ports.Mailer
	Clock  ports.Clock
	IDs    ports.IDs
	Log    *slog.Logger
	Auth   *auth.Service
	Config config.Config
	Listen *ListenAddr
}

// Teams provides the team use cases and their routes.
var Teams = fx.Module("teams",
	fx.Provide(
		func(d TeamDeps) *teams.Service {
			policy := teams.DefaultPolicy()
			policy.MaxInvitationsPerDay = d.Config.Quotas.InvitationsPerDay
			policy.MaxResendsPerDay = d.Config.Quotas.InvitationResendsPerDay
			return teams.New(teams.Deps{
				Tx: d.Tx, Teams: d.Store.Teams(), Memberships: d.Store.Memberships(), Invitations: d.Store.Invitations(),
				Users: d.Store.Users(), Keys: d.Auth, Outbox: d.Outbox,
				Mailer: d.Mailer, Clock: d.Clock, IDs: d.IDs, Log: d.Log, Policy: policy,
				ConsoleURL: consoleURL(d.Config, d.Listen),
			})
		},
		fx.Annotate(func(svc *teams.Service) Routes { return httpapi.NewTeamHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
	),
)
