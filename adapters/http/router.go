// Package httpapi is the HTTP transport (gorilla/mux): the route table, the
// middleware every request passes, the one table that maps domain errors to
// statuses and the error envelope, the JSON shapes (DTOs) of every endpoint,
// the operational endpoints, the server's lifecycle and the embedded OpenAPI
// document. It drives the application services. An adapter mounted in its
// router (adapters/cdprelay) adds Routes to the table and answers through
// its error mapper, RequestLogger, WriteBody and NoteSwitchedProtocols.
package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/domain"
)

// HandlerFunc serves one endpoint. A handler that fails returns the error
// instead of answering, so that every failure reaches the client through the
// one mapper in errors.go; a handler that returns nil has written its
// response.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP is the one place where a handler's error becomes a response.
func (f HandlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		writeError(w, r, err)
	}
}

// Route is one endpoint. The route table is data, so tests can walk it.
type Route struct {
	Method  string
	Path    string
	Handler HandlerFunc
	// Public routes need no credentials; every other route passes the
	// authentication middleware first.
	Public bool
	// Name identifies the route (mux route name); unique when set.
	Name string
}

// registered pairs a table entry with its mux route, to answer which
// methods a path allows.
type registered struct {
	method string
	route  *mux.Route
}

// NewRouter builds the handler for routes: every request gets a request id,
// the access log, metrics and panic recovery; routes that are not Public
// pass authenticate first. Unknown paths answer 404 and known paths with
// another method 405 with an Allow header, both in the error envelope.
//
// inner middleware runs after the request id, the access log and metrics,
// before routing, outermost first (CORS, which answers preflights itself).
//
// A malformed table (missing method, path or handler, a duplicate method and
// path or name, a non-public route without authenticate) is a programming
// error and panics, as http.ServeMux.Handle does, so it cannot ship.
func NewRouter(routes []Route, authenticate Middleware, log *zap.Logger, metrics *Metrics, inner ...Middleware) http.Handler {
	r := mux.NewRouter()
	var table []registered
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, rt := range routes {
		if rt.Method == "" || rt.Path == "" || rt.Handler == nil {
			panic(fmt.Sprintf("httpapi: route %q %q: method, path and handler are required", rt.Method, rt.Path))
		}
		key := rt.Method + " " + rt.Path
		if seen[key] {
			panic("httpapi: duplicate route " + key)
		}
		seen[key] = true
		if rt.Name != "" {
			if names[rt.Name] {
				panic("httpapi: duplicate route name " + rt.Name)
			}
			names[rt.Name] = true
		}
		var h http.Handler = rt.Handler
		if !rt.Public {
			if authenticate == nil {
				// Failing closed: a protected route must never be served open.
				panic("httpapi: route " + key + " is not public but no authentication middleware was given")
			}
			h = authenticate(h)
		}
		// Parameters are checked before authentication looks anything up.
		h = checkParams(h)
		// Tagged outside authentication, so a refused request is still
		// counted under its route.
		h = tagRoute(rt.Path, h)
		methods := []string{rt.Method}
		if rt.Method == http.MethodGet {
			// HEAD works wherever GET does (RFC 9110): the same answer,
			// which net/http sends without its body.
			methods = append(methods, http.MethodHead)
		}
		mr := r.Handle(rt.Path, h).Methods(methods...)
		if rt.Name != "" {
			mr = mr.Name(rt.Name)
		}
		if err := mr.GetError(); err != nil {
			panic(fmt.Sprintf("httpapi: route %s: %v", key, err))
		}
		table = append(table, registered{method: rt.Method, route: mr})
	}
	r.NotFoundHandler = HandlerFunc(func(_ http.ResponseWriter, req *http.Request) error {
		if rest, ok := strings.CutPrefix(req.URL.Path, "/api/v1/webhooks"); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			// SPEC.md puts the webhook endpoints under /v1, not /api/v1.
			return &domain.Error{Kind: domain.KindNotFound, Message: "no such endpoint: webhook endpoints are at /v1/webhooks" + rest}
		}
		return &domain.Error{Kind: domain.KindNotFound, Message: "no such endpoint"}
	})
	r.MethodNotAllowedHandler = HandlerFunc(func(w http.ResponseWriter, req *http.Request) error {
		allow := allowedMethods(table, req)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &transportError{
			kind:    kindMethodNotAllowed,
			message: fmt.Sprintf("%s is not allowed here; allowed: %s", req.Method, strings.Join(allow, ", ")),
		}
	})
	var h http.Handler = r
	for _, m := range slices.Backward(inner) {
		h = m(h)
	}
	return instrument(h, log, metrics)
}

// tagRoute records the matched template for the access log and metrics,
// which run before mux and must not label by raw paths full of ids.
func tagRoute(template string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = template
		}
		next.ServeHTTP(w, r)
	})
}

// allowedMethods asks every route whether it would match req's path with
// its own method; mux itself only says that some method would.
func allowedMethods(table []registered, req *http.Request) []string {
	var allow []string
	for _, e := range table {
		probe := req.Clone(req.Context())
		probe.Method = e.method
		var m mux.RouteMatch
		if e.route.Match(probe, &m) && m.MatchErr == nil && !slices.Contains(allow, e.method) {
			allow = append(allow, e.method)
		}
	}
	if slices.Contains(allow, http.MethodGet) && !slices.Contains(allow, http.MethodHead) {
		allow = append(allow, http.MethodHead)
	}
	slices.Sort(allow)
	return allow
}
