package wiring

import (
	"strings"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/web"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/application/webhooks"
	"github.com/profilesvc/profilesvc/config"
)

// WebDeps are what the console drives.
type WebDeps struct {
	fx.In
	Auth      *auth.Service
	Profiles  *profiles.Service
	Teams     *teams.Service
	Proxies   *proxies.Service
	Webhooks  *webhooks.Service
	Snapshots *snapshots.Service
	Data      *browserdata.Service
	Config    config.Config
}

// Web provides the dashboard's routes, mounted in the transport's router.
var Web = fx.Module("web",
	fx.Provide(
		fx.Annotate(func(d WebDeps) (Routes, error) {
			c, err := web.New(web.Services{
				Auth: d.Auth, Profiles: d.Profiles, Teams: d.Teams, Proxies: d.Proxies,
				Webhooks: d.Webhooks, Snapshots: d.Snapshots, Data: d.Data,
			}, web.Options{
				Secure:          strings.HasPrefix(d.Config.Browser.PublicURL, "https://"),
				UploadTimeout:   d.Config.ProfileDataUploadTimeout,
				WebhookAttempts: len(d.Config.WebhookRetrySchedule),
			})
			if err != nil {
				return nil, err
			}
			return c.Routes(), nil
		}, fx.ResultTags(`group:"routes"`)),
	),
)
