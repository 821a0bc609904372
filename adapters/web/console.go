// Package web is the dashboard: the web console served under /app, a
// second driving adapter beside the JSON API. Its pages are rendered on the
// server (html/template) and call the same application services as the API,
// so every role, quota, event and error is the API's; a little embedded
// JavaScript keeps statuses fresh and copies snippets. It owns the
// console's session cookie, its cross-origin (CSRF) protection and its
// security headers. Mounted in the HTTP transport's router, its routes are
// public there and it authenticates them itself.
package web

import (
	"embed"
	"net/http"
	"time"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/application/webhooks"
)

// Prefix is where the console lives; "/" sends a browser there.
const Prefix = "/app"

//go:embed templates static
var files embed.FS

// Services are the use cases the console drives.
type Services struct {
	Auth      *auth.Service
	Profiles  *profiles.Service
	Teams     *teams.Service
	Proxies   *proxies.Service
	Webhooks  *webhooks.Service
	Snapshots *snapshots.Service
	Data      *browserdata.Service
}

// Options configure the console.
type Options struct {
	// Secure marks the session cookie Secure: the console is served over
	// https (PUBLIC_URL says so).
	Secure bool
	// UploadTimeout lifts the server's read timeout, meant for small
	// forms, for a browser data upload (PROFILE_DATA_UPLOAD_TIMEOUT); the
	// service bounds the upload itself by the same.
	UploadTimeout time.Duration
	// WebhookAttempts is how many attempts a webhook delivery gets before
	// it fails: the length of WEBHOOK_RETRY_SCHEDULE, which the Settings
	// pages state.
	WebhookAttempts int
}

// Console serves the dashboard's pages.
type Console struct {
	svc    Services
	opts   Options
	pages  pages
	assets assets
	// origin refuses a state change that a page of another site sent
	// (net/http's Sec-Fetch-Site and Origin checks).
	origin *http.CrossOriginProtection
}

// New parses the console's templates and hashes its assets.
func New(svc Services, opts Options) (*Console, error) {
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	c := &Console{svc: svc, opts: opts, pages: p, assets: a, origin: http.NewCrossOriginProtection()}
	c.origin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, nil, errCrossOrigin)
	}))
	return c, nil
}

// route is one page or action of the console.
type route struct {
	method, path string
	h            http.Handler
}

// Routes lists the console's pages and actions. Every one is public in the
// transport's table: the console resolves its own session (signedIn) and
// renders its own errors.
func (c *Console) Routes() []httpapi.Route {
	rs := []route{
		{http.MethodGet, "/", http.RedirectHandler(Prefix+"/", http.StatusFound)},
		{http.MethodGet, Prefix, http.RedirectHandler(Prefix+"/", http.StatusMovedPermanently)},
		{http.MethodGet, Prefix + "/", c.signedIn(c.home)},
		{http.MethodGet, Prefix + "/static/{name}", http.HandlerFunc(c.static)},
	}
	for _, group := range [][]route{c.accountRoutes(), c.profileRoutes(), c.liveRoutes(), c.settingsRoutes(), c.teamRoutes(), c.proxyRoutes(), c.dataRoutes()} {
		rs = append(rs, group...)
	}
	out := make([]httpapi.Route, 0, len(rs))
	for _, r := range rs {
		h := c.origin.Handler(c.headers(r.h))
		out = append(out, httpapi.Route{
			Method: r.method, Path: r.path, Public: true, Name: "console " + r.method + " " + r.path,
			Handler: func(w http.ResponseWriter, req *http.Request) error { h.ServeHTTP(w, req); return nil },
		})
	}
	return out
}
