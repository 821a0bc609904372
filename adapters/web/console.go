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

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/teams"
)

// Prefix is where the console lives; "/" sends a browser there.
const Prefix = "/app"

//go:embed templates static
var files embed.FS

// Services are the use cases the console drives.
type Services struct {
	Auth     *auth.Service
	Profiles *profiles.Service
	Teams    *teams.Service
}

// Options configure the console.
type Options struct {
	// Secure marks the session cookie Secure: the console is served over
	// https (PUBLIC_URL says so).
	Secure bool
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

// Routes lists the console's pages and actions. Every one is public in the
// transport's table: the console resolves its own session (signedIn) and
// renders its own errors.
func (c *Console) Routes() []httpapi.Route {
	get, post := http.MethodGet, http.MethodPost
	rs := []struct {
		method, path string
		h            http.Handler
	}{
		{get, "/", http.RedirectHandler(Prefix+"/", http.StatusFound)},
		{get, Prefix, http.RedirectHandler(Prefix+"/", http.StatusMovedPermanently)},
		{get, Prefix + "/", c.signedIn(c.home)},
		{get, Prefix + "/static/{name}", http.HandlerFunc(c.static)},

		{get, Prefix + "/signup", c.public(c.signupForm)},
		{post, Prefix + "/signup", c.public(c.signup)},
		{get, Prefix + "/signin", c.public(c.signinForm)},
		{post, Prefix + "/signin", c.public(c.signin)},
		{post, Prefix + "/signout", c.public(c.signout)},
		{get, Prefix + "/forgot-password", c.public(c.forgotForm)},
		{post, Prefix + "/forgot-password", c.public(c.forgot)},
		{get, Prefix + "/reset-password", c.public(c.resetForm)},
		{post, Prefix + "/reset-password", c.public(c.reset)},
		{get, Prefix + "/invitations/accept", c.signedIn(c.acceptForm)},
		{post, Prefix + "/invitations/accept", c.signedIn(c.accept)},
		{post, Prefix + "/team/switch", c.signedIn(c.switchTeam)},

		{get, Prefix + "/profiles", c.signedIn(c.profileList)},
		{get, Prefix + "/profiles/status", c.signedIn(c.profileStatus)},
		{get, Prefix + "/profiles/new", c.signedIn(c.profileNew)},
		{post, Prefix + "/profiles/new", c.signedIn(c.profileCreate)},
		{get, Prefix + "/profiles/{id}", c.signedIn(c.profileShow)},
		{get, Prefix + "/profiles/{id}/edit", c.signedIn(c.profileEdit)},
		{post, Prefix + "/profiles/{id}/edit", c.signedIn(c.profileUpdate)},
		{get, Prefix + "/profiles/{id}/delete", c.signedIn(c.profileDeleteForm)},
		{post, Prefix + "/profiles/{id}/delete", c.signedIn(c.profileDelete)},
		{post, Prefix + "/profiles/{id}/launch", c.signedIn(c.profileLaunch)},
		{post, Prefix + "/profiles/{id}/release", c.signedIn(c.profileRelease)},
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
