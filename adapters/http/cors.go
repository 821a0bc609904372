package httpapi

import (
	"net/http"
	"slices"
)

// corsMaxAge is how long, in seconds, a browser may keep a preflight's
// answer.
const corsMaxAge = "600"

// Methods and headers a cross-origin caller may use, and the response
// headers its scripts may read: those of the API's own contract
// (credentials, team, idempotency, conditional requests; request id, rate
// limit, retry, version, replay).
const (
	corsAllowMethods  = "GET, POST, PUT, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, X-API-Key, X-Team-ID, Idempotency-Key, If-Match, If-None-Match, X-Request-ID"
	corsExposeHeaders = "X-Request-ID, RateLimit, RateLimit-Policy, Retry-After, ETag, Idempotent-Replayed, Location"
)

// CORS lets scripts of the listed origins call the API from a browser: an
// answer to a request whose Origin is one of them carries
// Access-Control-Allow-Origin with that origin (with "*" listed, any
// origin: the API authenticates by header, never by cookie, so no
// credentials are allowed and none are needed), and a preflight (OPTIONS
// with Access-Control-Request-Method) from one is answered 204 with the
// methods and headers the API takes. Requests from other origins, and
// requests without Origin, are served as without CORS: no header grants
// them anything, and their preflight meets the router (405). With no
// origins the middleware is not installed.
func CORS(origins []string) Middleware {
	anyOrigin := slices.Contains(origins, "*")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			if origin == "" || !(anyOrigin || slices.Contains(origins, origin)) {
				next.ServeHTTP(w, r)
				return
			}
			if anyOrigin {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", origin)
			}
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			next.ServeHTTP(w, r)
		})
	}
}
