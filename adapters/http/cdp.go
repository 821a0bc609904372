package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
	"golang.org/x/net/http/httpguts"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
)

// CDPTargets checks a relay client's token and says where the session's
// browser runs (profiles.Service has it).
type CDPTargets interface {
	CDPTarget(ctx context.Context, sessionID, token string) (profiles.CDPTarget, error)
}

// relayedHeader marks a request that one instance relays to the instance
// that owns the session. The owner runs the browser; if it points elsewhere
// in turn, the instances disagree about the session and a second hop could
// go round in circles, so it answers 503 instead.
const relayedHeader = "X-Profilesvc-Relayed"

const (
	// cdpDialTimeout bounds connecting to a browser or another instance,
	// both a short hop away.
	cdpDialTimeout = 10 * time.Second
	// cdpAnswerTimeout bounds the wait for the answer to an upgrade or a
	// /json/version, which a live browser gives at once.
	cdpAnswerTimeout = 30 * time.Second
	// cdpVersionMaxBytes bounds the browser's /json/version document, a
	// few hundred bytes from Chromium.
	cdpVersionMaxBytes = 64 << 10
)

// browserHiddenHeaders never reach a browser. Chromium refuses a WebSocket
// client that sends Origin unless started with --remote-allow-origins, and
// the caller's credentials are the service's business, not the browser's.
var browserHiddenHeaders = []string{"Origin", "Authorization", "X-API-Key", "Cookie", relayedHeader}

// credentialHeaders are the caller's credentials for this service, which
// the relay to another instance does not need: the token in the query
// authenticates there too.
var credentialHeaders = []string{"Authorization", "X-API-Key", "Cookie"}

// CDPHandlers relays clients of a session's browser (Playwright's
// connectOverCDP, Puppeteer's connect, chromedp) to the browser's own
// DevTools WebSocket on loopback, or to the instance that runs it.
type CDPHandlers struct {
	svc CDPTargets
	// publicURL is the base of the URLs handed to clients (PUBLIC_URL),
	// read per request: by default it is the listening address, known
	// only once the server has started.
	publicURL func() string
	transport *http.Transport
	client    *http.Client
}

// NewCDPHandlers returns the relay endpoints of svc; publicURL is the base
// of the cdpUrl that /json/version hands back.
func NewCDPHandlers(svc CDPTargets, publicURL func() string) *CDPHandlers {
	transport := &http.Transport{
		// No proxy from the environment: the targets are this host's
		// browsers and the other instances, which a proxy cannot reach.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: cdpDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   cdpDialTimeout,
		ResponseHeaderTimeout: cdpAnswerTimeout,
		IdleConnTimeout:       90 * time.Second,
	}
	return &CDPHandlers{
		svc:       svc,
		publicURL: publicURL,
		transport: transport,
		client: &http.Client{
			Transport: transport,
			Timeout:   cdpAnswerTimeout,
			// A browser does not redirect /json/version; whatever does is
			// not the browser.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Routes lists the endpoints. They are public: the session's token in
// ?token= authenticates, since CDP clients send no other credentials.
func (h *CDPHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp", Handler: h.connect, Public: true, Name: "sessions.cdp"},
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp/json/version", Handler: h.version, Public: true, Name: "sessions.cdp.version"},
		// Playwright asks for the document with a trailing slash.
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp/json/version/", Handler: h.version, Public: true},
	}
}

// target checks the token before anything reaches a browser.
func (h *CDPHandlers) target(r *http.Request) (profiles.CDPTarget, error) {
	return h.svc.CDPTarget(r.Context(), mux.Vars(r)["id"], r.URL.Query().Get("token"))
}

func (h *CDPHandlers) connect(w http.ResponseWriter, r *http.Request) error {
	target, err := h.target(r)
	if err != nil {
		return err
	}
	if target.Node != "" {
		return h.relay(w, r, target.Node)
	}
	if !isWebSocketUpgrade(r) {
		return domain.BadRequest("the cdpUrl is a WebSocket: connect with Upgrade: websocket")
	}
	browser, err := browserURL(target.Local)
	if err != nil {
		return err
	}
	liftDeadlines(w)
	h.proxy(w, r, func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme = browser.Scheme
		pr.Out.URL.Host = browser.Host
		pr.Out.URL.Path = browser.Path
		pr.Out.URL.RawPath = browser.RawPath
		// The browser's endpoint takes no query; the token is the relay's.
		pr.Out.URL.RawQuery = ""
		// Chromium answers only requests whose Host is an IP address or
		// localhost, as its own address is.
		pr.Out.Host = browser.Host
		for _, k := range browserHiddenHeaders {
			pr.Out.Header.Del(k)
		}
	}).ServeHTTP(w, r)
	return nil
}

func (h *CDPHandlers) version(w http.ResponseWriter, r *http.Request) error {
	target, err := h.target(r)
	if err != nil {
		return err
	}
	if target.Node != "" {
		return h.relay(w, r, target.Node)
	}
	browser, err := browserURL(target.Local)
	if err != nil {
		return err
	}
	public, err := publicCDPURL(h.publicURL(), mux.Vars(r)["id"], r.URL.Query().Get("token"))
	if err != nil {
		return err
	}
	doc, err := h.browserVersion(r.Context(), browser)
	if err != nil {
		if r.Context().Err() == nil {
			requestLogger(r.Context()).Warn("browser did not answer /json/version", zap.Error(err))
		}
		return domain.Unavailable("the session's browser did not answer; retry later")
	}
	doc["webSocketDebuggerUrl"], err = json.Marshal(public)
	if err != nil {
		return err
	}
	// The document carries the session's token.
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, http.StatusOK, doc)
	return nil
}

// browserVersion asks the browser for its /json/version document.
func (h *CDPHandlers) browserVersion(ctx context.Context, browser *url.URL) (map[string]json.RawMessage, error) {
	u := url.URL{Scheme: browser.Scheme, Host: browser.Host, Path: "/json/version"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("browser answered %s", resp.Status)
	}
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, cdpVersionMaxBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("browser's /json/version: %w", err)
	}
	if doc == nil {
		return nil, errors.New("browser's /json/version is null")
	}
	return doc, nil
}

// relay hands the request as it came, token included, to the instance that
// runs the session's browser, and its answer back.
func (h *CDPHandlers) relay(w http.ResponseWriter, r *http.Request, node string) error {
	if r.Header.Get(relayedHeader) != "" {
		requestLogger(r.Context()).Warn("cdp relay refused a second hop", zap.String("node", node))
		return domain.Unavailable("the instance that runs this session's browser is changing; retry later")
	}
	target, err := url.Parse(node)
	if err != nil {
		return fmt.Errorf("session's node address %q: %w", node, err)
	}
	if (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return fmt.Errorf("session's node address %q is not an http(s) URL", node)
	}
	if isWebSocketUpgrade(r) {
		liftDeadlines(w)
	}
	h.proxy(w, r, func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		for _, k := range credentialHeaders {
			pr.Out.Header.Del(k)
		}
		pr.Out.Header.Set(relayedHeader, "1")
	}).ServeHTTP(w, r)
	return nil
}

// proxy relays one request as rewrite says. httputil.ReverseProxy carries
// an upgraded connection both ways once the target answers 101, and
// relays any other answer as it is.
func (h *CDPHandlers) proxy(w http.ResponseWriter, r *http.Request, rewrite func(*httputil.ProxyRequest)) *httputil.ReverseProxy {
	log := requestLogger(r.Context())
	return &httputil.ReverseProxy{
		Rewrite:   rewrite,
		Transport: h.transport,
		ErrorLog:  zap.NewStdLog(log.Named("cdp")),
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode == http.StatusSwitchingProtocols {
				noteSwitchedProtocols(w)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				// The client went away; nobody is left to answer.
				return
			}
			log.Warn("cdp relay failed", zap.Error(err))
			writeError(w, r, domain.Unavailable("the session's browser did not answer; retry later"))
		},
	}
}

// noteSwitchedProtocols records a 101 for the access log and the metrics:
// the proxy writes it on the hijacked connection, past the recorder, which
// would otherwise count a relayed WebSocket as a 200.
func noteSwitchedProtocols(w http.ResponseWriter) {
	for {
		if rec, ok := w.(*responseRecorder); ok {
			rec.status = http.StatusSwitchingProtocols
			rec.wroteHeader = true
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// liftDeadlines clears the server's read and write deadlines, meant for one
// request, on a connection about to carry a WebSocket that lives as long as
// its client. Hijacking a connection does not promise to clear them.
func liftDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		responseLogger(w).Warn("could not lift the deadlines of a cdp connection: " + err.Error())
	}
}

func isWebSocketUpgrade(r *http.Request) bool {
	return httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// browserURL turns the browser's DevTools WebSocket address into the
// http(s) URL that an upgrade request is sent to.
func browserURL(local string) (*url.URL, error) {
	u, err := url.Parse(local)
	if err != nil {
		return nil, fmt.Errorf("browser's cdp address %q: %w", local, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("browser's cdp address %q is not a ws(s) URL", local)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("browser's cdp address %q has no host", local)
	}
	return u, nil
}

// publicCDPURL is a session's cdpUrl as clients reach it: ws, or wss behind
// https, at PUBLIC_URL's host (and path prefix).
func publicCDPURL(publicURL, sessionID, token string) (string, error) {
	base, err := url.Parse(publicURL)
	if err != nil {
		return "", fmt.Errorf("public url %q: %w", publicURL, err)
	}
	scheme := "ws"
	switch base.Scheme {
	case "https":
		scheme = "wss"
	case "http":
	default:
		return "", fmt.Errorf("public url %q is not an http(s) URL", publicURL)
	}
	u := url.URL{
		Scheme:   scheme,
		Host:     base.Host,
		Path:     strings.TrimSuffix(base.Path, "/") + "/api/v1/sessions/" + sessionID + "/cdp",
		RawQuery: url.Values{"token": {token}}.Encode(),
	}
	return u.String(), nil
}
