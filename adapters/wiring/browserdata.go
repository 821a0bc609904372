package wiring

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// BrowserData provides the browser data and cookie use cases, their
// routes, the blobs the profiles module stores a browser's data in, and
// the blob collector.
var BrowserData = fx.Module("browserdata",
	fx.Provide(
		newBrowserDataBlobs,
		func(svc *profiles.Service, blobs *browserdata.Blobs) *browserdata.Service {
			return browserdata.New(svc, blobs)
		},
		func() CollectorInterval { return defaultCollectorInterval },
		fx.Annotate(func(svc *browserdata.Service, profiles *profiles.Service, cfg config.Config) Routes {
			return httpapi.NewDataHandlers(svc, profiles, cfg.ProfileDataUploadTimeout).Routes()
		}, fx.ResultTags(`group:"routes"`)),
	),
	fx.Invoke(startCollector),
)

func newBrowserDataBlobs(store storage.Store, tx ports.UnitOfWork, blobs ports.BlobStore, clock ports.Clock, ids ports.IDs, log *slog.Logger, cfg config.Config) *browserdata.Blobs {
	return browserdata.NewBlobs(browserdata.BlobsDeps{
		Tx: tx, Blobs: blobs, BlobRefs: store.BlobRefs(), Clock: clock, IDs: ids, Log: log,
		DataMax: cfg.ProfileDataMax, UploadTimeout: cfg.ProfileDataUploadTimeout,
	})
}

// CollectorInterval is how often each instance deletes the blobs nothing
// refers to any more. Tests replace it (fx.Decorate).
type CollectorInterval time.Duration

// defaultCollectorInterval frees storage within minutes of a deletion
// without querying often.
const defaultCollectorInterval = CollectorInterval(time.Minute)

// startCollector runs the blob collector on every instance, as the reaper.
func startCollector(lc fx.Lifecycle, blobs *browserdata.Blobs, every CollectorInterval, log *slog.Logger) {
	runEvery(lc, time.Duration(every), func(ctx context.Context) {
		if n, err := blobs.Collect(ctx); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "blob collector", "error", err.Error(), "deleted", n)
		} else if n > 0 {
			log.InfoContext(ctx, "blob collector deleted unreferenced blobs", "deleted", n)
		}
	})
}
