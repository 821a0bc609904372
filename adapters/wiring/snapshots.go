package wiring

import (
	"go.uber.org/fx"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Snapshots provides the time machine's use cases and their routes.
var Snapshots = fx.Module("snapshots",
	fx.Provide(
		newSnapshots,
		fx.Annotate(func(svc *snapshots.Service) Routes { return httpapi.NewSnapshotHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
	),
)

func newSnapshots(store storage.Store, tx ports.UnitOfWork, profiles *profiles.Service, proxies *proxies.Service, clock ports.Clock, ids ports.IDs, cfg config.Config) *snapshots.Service {
	return snapshots.New(snapshots.Deps{
		Tx: tx, Profiles: profiles, Snapshots: store.Snapshots(), BlobRefs: store.BlobRefs(), Teams: store.Teams(), Proxies: proxies,
		Clock: clock, IDs: ids, PerProfile: cfg.SnapshotsPerProfile,
	})
}
