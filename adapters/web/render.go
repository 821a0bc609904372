package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

// policy is the console's Content-Security-Policy: its own scripts, styles
// and images only, no inline script or style, forms that post only to it,
// and no page of another site may frame it.
const policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// headers sets what every console answer carries: the policy, no framing,
// no sniffing, no referrer (a reset or invitation link holds a token in
// its query), and no caching of pages that show a team's data.
func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// pages are the parsed templates, one set per page, each with the layout.
type pages map[string]*template.Template

var funcs = template.FuncMap{
	"millis": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"bytes": func(n int64) string {
		const unit = 1024
		if n < unit {
			return strconv.FormatInt(n, 10) + " B"
		}
		div, exp := int64(unit), 0
		for m := n / unit; m >= unit; m /= unit {
			div *= unit
			exp++
		}
		return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
	},
	"join": strings.Join,
}

func parsePages() (pages, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := pages{}
	for _, name := range names {
		base := path.Base(name)
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(files, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("web: parse %s: %w", base, err)
		}
		p[strings.TrimSuffix(base, ".html")] = t
	}
	return p, nil
}

// assets are the console's own stylesheet and script, addressed by their
// content so a browser may keep them for good.
type assets struct {
	body map[string][]byte
	sum  map[string]string
}

func loadAssets() (assets, error) {
	a := assets{body: map[string][]byte{}, sum: map[string]string{}}
	entries, err := fs.ReadDir(files, "static")
	if err != nil {
		return a, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(files, "static/"+e.Name())
		if err != nil {
			return a, err
		}
		s := sha256.Sum256(b)
		a.body[e.Name()] = b
		a.sum[e.Name()] = hex.EncodeToString(s[:8])
	}
	return a, nil
}

// URL is the address of the asset name, with its content's digest.
func (a assets) URL(name string) string {
	return Prefix + "/static/" + name + "?v=" + a.sum[name]
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	b, ok := c.assets.body[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(b)
}

// view is what a page template sees.
type view struct {
	Title  string
	Flash  string
	Me     *auth.Me
	Teams  []teams.TeamView
	Actor  team.Actor
	Assets assets
	// Error is a failure to show above a form sent again.
	Error *problem
	Data  any
}

// Can reports whether the signed-in user's role allows action (read,
// write, delete, administer, manage_owners): a page shows no button the
// API would refuse.
func (v view) Can(action string) bool {
	return v.Me != nil && v.Actor.Role.Can(team.Action(action))
}

// render answers with the page name.
func (c *Console) render(q *request, status int, name, title string, data any) error {
	return c.renderWith(q, status, name, title, data, nil)
}

// renderWith is render with a failure shown above the page's form.
func (c *Console) renderWith(q *request, status int, name, title string, data any, failure error) error {
	if err := c.layout(q); err != nil {
		return err
	}
	v := view{Title: title, Me: q.me, Teams: q.teams, Actor: q.actor, Assets: c.assets, Data: data, Flash: c.takeFlash(q)}
	if failure != nil {
		p := c.problemOf(q.r, failure)
		v.Error = &p
		status = p.Status
	}
	return c.write(q.w, status, name, v)
}

func (c *Console) write(w http.ResponseWriter, status int, name string, v view) error {
	t, ok := c.pages[name]
	if !ok {
		return fmt.Errorf("web: no page %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// problem is a failure as a page says it: in words, never a stack or an
// envelope.
type problem struct {
	Status  int
	Heading string
	Message string
	Fields  []domain.FieldIssue
	// SignIn offers the sign-in page (the session ended).
	SignIn bool
}

var errCrossOrigin = &domain.Error{Kind: domain.KindForbidden, Message: "this request came from another site and was refused; use the console's own pages"}

func (c *Console) problemOf(r *http.Request, err error) problem {
	var de *domain.Error
	if !errors.As(err, &de) {
		httpapi.RequestLogger(r.Context()).Error("console request failed", zap.Error(err), zap.String("path", r.URL.Path))
		return problem{Status: http.StatusInternalServerError, Heading: "Something went wrong on our side",
			Message: "The request could not be completed. Try again; if it keeps failing, tell your administrator the request id " + httpapi.RequestIDFrom(r.Context()) + "."}
	}
	p := problem{Message: de.Message, Fields: de.Fields}
	switch de.Kind {
	case domain.KindBadRequest:
		p.Status, p.Heading = http.StatusBadRequest, "That could not be read"
	case domain.KindUnauthorized:
		p.Status, p.Heading, p.SignIn = http.StatusUnauthorized, "Please sign in", true
	case domain.KindForbidden:
		p.Status, p.Heading = http.StatusForbidden, "Not allowed"
	case domain.KindNotFound:
		p.Status, p.Heading = http.StatusNotFound, "Not found"
	case domain.KindConflict:
		p.Status, p.Heading = http.StatusConflict, "That cannot be done now"
	case domain.KindPreconditionFailed:
		p.Status, p.Heading = http.StatusPreconditionFailed, "Changed meanwhile"
	case domain.KindValidation:
		p.Status, p.Heading = http.StatusUnprocessableEntity, "Please check the form"
	case domain.KindRateLimited:
		p.Status, p.Heading = http.StatusTooManyRequests, "Too many attempts"
		if de.RetryAfter > 0 {
			p.Message += "; try again in " + de.RetryAfter.Round(time.Second).String()
		}
	case domain.KindUnavailable:
		p.Status, p.Heading = http.StatusServiceUnavailable, "Temporarily unavailable"
	default:
		p.Status, p.Heading = http.StatusInternalServerError, "Something went wrong on our side"
		p.Message = "The request could not be completed. Request id " + httpapi.RequestIDFrom(r.Context()) + "."
	}
	return p
}

// renderError answers with a page that says what failed.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, q *request, err error) {
	v := view{Title: "Error", Assets: c.assets}
	if q != nil {
		// A page that failed still shows who is signed in, when that
		// can be read; the error is the page's either way.
		_ = c.layout(q)
		v.Me, v.Teams, v.Actor = q.me, q.teams, q.actor
	}
	p := c.problemOf(r, err)
	v.Error = &p
	if werr := c.write(w, p.Status, "error", v); werr != nil {
		httpapi.RequestLogger(r.Context()).Error("console error page failed", zap.Error(werr))
		http.Error(w, p.Heading, p.Status)
	}
}
