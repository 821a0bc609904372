package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

// The console's cookies. The session cookie holds the dashboard session
// token (auth.Credentials.SessionToken): HttpOnly, so no script reads it,
// and SameSite=Lax, so a cross-site POST does not carry it. The team cookie
// is the team the console acts in; it is no secret, and a team the user is
// not an active member of is refused at every request.
const (
	sessionCookie = "psvc_session"
	teamCookie    = "psvc_team"
	flashCookie   = "psvc_flash"
	sessionMaxAge = 30 * 24 * time.Hour
)

// request is one console request: the writer, the request, and for a
// signed-in page the actor and what the layout shows of them.
type request struct {
	w     http.ResponseWriter
	r     *http.Request
	actor team.Actor
	me    *auth.Me
	teams []teams.TeamView
}

// handler serves one console page or action. An error it returns is
// rendered as a page that says it in words (renderError).
type handler func(q *request) error

// public serves a page that needs no session (sign-in, sign-up, password
// reset). A signed-in user is still known there, for the layout.
func (c *Console) public(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{w: w, r: r}
		if err := h(q); err != nil {
			c.renderError(w, r, q, err)
		}
	})
}

// signedIn serves a page of a signed-in user. Without a live session a
// page read is sent to the sign-in page (and back after it); an action is
// refused.
func (c *Console) signedIn(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{w: w, r: r}
		if err := c.resolve(q); err != nil {
			if domain.IsKind(err, domain.KindUnauthorized) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				c.clearSession(w)
				http.Redirect(w, r, Prefix+"/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.renderError(w, r, nil, err)
			return
		}
		if err := h(q); err != nil {
			c.renderError(w, r, q, err)
		}
	})
}

// resolve finds the request's actor from its session and team cookies. A
// team cookie that names a team the user may no longer act in is dropped,
// and the sign-in team used.
func (c *Console) resolve(q *request) error {
	token := cookieValue(q.r, sessionCookie)
	if token == "" {
		return domain.Unauthorized("sign in to continue")
	}
	ctx := q.r.Context()
	actor, err := c.svc.Auth.Authenticate(ctx, auth.Credentials{SessionToken: token, TeamID: cookieValue(q.r, teamCookie)})
	if domain.IsKind(err, domain.KindNotFound) {
		c.setCookie(q.w, teamCookie, "", -1)
		actor, err = c.svc.Auth.Authenticate(ctx, auth.Credentials{SessionToken: token})
	}
	if err != nil {
		return err
	}
	q.actor = actor
	return nil
}

// layout reads what the layout shows of a signed-in user (their name, team
// and role, and their teams to switch to), once and only for a page: the
// status polls, the live view and downloads need none of it.
func (c *Console) layout(q *request) error {
	if q.me != nil || q.actor.UserID == "" {
		return nil
	}
	ctx := q.r.Context()
	me, err := c.svc.Auth.Me(ctx, q.actor)
	if err != nil {
		return err
	}
	teams, err := c.svc.Teams.ListTeams(ctx, q.actor)
	if err != nil {
		return err
	}
	q.me, q.teams = &me, teams
	return nil
}

// startSession keeps a signed-in user's session token in the session
// cookie, in their sign-in team. A session the browser held before (a
// sign-in over another) is ended, not left to run out.
func (c *Console) startSession(q *request, token string) error {
	if old := cookieValue(q.r, sessionCookie); old != "" {
		if err := c.svc.Auth.SignOut(q.r.Context(), old); err != nil {
			return err
		}
	}
	c.setCookie(q.w, sessionCookie, token, sessionMaxAge)
	c.setCookie(q.w, teamCookie, "", -1)
	return nil
}

func (c *Console) clearSession(w http.ResponseWriter) {
	c.setCookie(w, sessionCookie, "", -1)
	c.setCookie(w, teamCookie, "", -1)
}

// setCookie sets (maxAge > 0) or deletes (maxAge < 0) a console cookie.
// A session cookie (maxAge 0) ends with the browser.
func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{
		Name: name, Value: value, Path: Prefix, HttpOnly: true, Secure: c.opts.Secure,
		SameSite: http.SameSiteLaxMode,
	}
	switch {
	case maxAge > 0:
		ck.MaxAge = int(maxAge / time.Second)
	case maxAge < 0:
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
}

func cookieValue(r *http.Request, name string) string {
	ck, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return ck.Value
}

// flash leaves a one-line message for the next page the browser loads.
func (c *Console) flash(w http.ResponseWriter, msg string) {
	c.setCookie(w, flashCookie, url.QueryEscape(msg), 0)
}

// takeFlash reads and clears the message left for this page.
func (c *Console) takeFlash(q *request) string {
	v := cookieValue(q.r, flashCookie)
	if v == "" {
		return ""
	}
	c.setCookie(q.w, flashCookie, "", -1)
	msg, err := url.QueryUnescape(v)
	if err != nil {
		return ""
	}
	return msg
}

// redirect answers an action with the page to load next (post, redirect,
// get), with msg as its flash.
func (c *Console) redirect(q *request, to, msg string) error {
	if msg != "" {
		c.flash(q.w, msg)
	}
	http.Redirect(q.w, q.r, to, http.StatusSeeOther)
	return nil
}

// localPath is next when it is a page of the console, else the console's
// home: a sign-in never sends the browser off the site, nor out of the
// console by a path that climbs out of it.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.ContainsAny(next, "\\\r\n") ||
		!strings.HasPrefix(u.Path, Prefix+"/") || strings.Contains(u.Path, "/.") || strings.Contains(u.Path, "//") {
		return Prefix + "/"
	}
	return next
}

// form reads the posted form, refusing values that no store keeps as sent
// (a NUL or invalid UTF-8), as the API's decoder does.
func form(q *request) (url.Values, error) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 1<<20)
	if err := q.r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, domain.BadRequest("the form is too large")
		}
		return nil, domain.BadRequest("the form could not be read")
	}
	for name, vs := range q.r.PostForm {
		for _, v := range vs {
			if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
				return nil, domain.Invalid(name, "must be text without NUL characters")
			}
		}
	}
	return q.r.PostForm, nil
}
