// Package cdprelay is the CDP relay: the WebSocket at a session's cdpUrl,
// carried to the session's browser or to the instance that runs it, and the
// /json/version document that tools discover it by. It is a driving adapter
// mounted in the HTTP transport's router (adapters/http): its routes join
// the one route table, and its failures, access log and metrics are the
// transport's.
package cdprelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gorilla/mux"
	"go.uber.org/zap"
	"golang.org/x/net/http/httpguts"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
)

// Targets checks a relay client's token and says where the session's
// browser runs (profiles.Service has it).
type Targets interface {
	CDPTarget(ctx context.Context, sessionID, token string) (profiles.CDPTarget, error)
}

// relayedHeader marks a request that one instance relays to the instance
// that owns the session. The owner runs the browser; if it points elsewhere
// in turn, the instances disagree about the session and a second hop could
// go round in circles, so it answers 503 instead.
const relayedHeader = "X-Profilesvc-Relayed"

const (
	// cdpDialTimeout bounds connecting to another instance, a short hop
	// away.
	cdpDialTimeout = 10 * time.Second
	// cdpAnswerTimeout bounds the wait for the answer to an upgrade or a
	// version, which a live browser or instance gives at once.
	cdpAnswerTimeout = 30 * time.Second
)

// credentialHeaders are the caller's credentials for this service, which
// the relay to another instance does not need: the token in the query
// authenticates there too.
var credentialHeaders = []string{"Authorization", "X-API-Key", "Cookie"}

const (
	// cdpMaxClientMessage bounds one message of a CDP client: a page's
	// content or a script is a few megabytes at most. A longer one closes
	// the connection (1009, message too big).
	cdpMaxClientMessage = 16 << 20
	// cdpVersionID is the id of the relay's own Browser.getVersion.
	cdpVersionID = 1
)

// Options configure the relay.
type Options struct {
	// PublicURL is the base of the URLs handed to clients (PUBLIC_URL),
	// read per request: by default it is the listening address, known
	// only once the server has started.
	PublicURL func() string
	// Origins are the origins whose pages may open a CDP connection
	// (CORS_ORIGINS, "*" for any); a page of the service's own origin and
	// a client that sends no Origin (Playwright, Puppeteer, chromedp) may
	// always.
	Origins []string
	// MaxConnections bounds the CDP connections the instance relays at
	// once (CDP_CONNECTIONS_MAX).
	MaxConnections int
}

// Relay carries clients of a session's browser (Playwright's
// connectOverCDP, Puppeteer's connect, chromedp) to the browser, through
// the connection the runtime opens for each client, or to the instance
// that runs it.
type Relay struct {
	svc       Targets
	opts      Options
	anyOrigin bool
	origins   map[string]bool
	// open counts the relayed connections.
	open      atomic.Int64
	transport *http.Transport
}

// New returns the relay of the sessions svc knows.
func New(svc Targets, opts Options) *Relay {
	transport := &http.Transport{
		// No proxy from the environment: the targets are the other
		// instances, which a proxy cannot reach.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: cdpDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   cdpDialTimeout,
		ResponseHeaderTimeout: cdpAnswerTimeout,
		IdleConnTimeout:       90 * time.Second,
	}
	h := &Relay{svc: svc, opts: opts, origins: map[string]bool{}, transport: transport}
	for _, o := range opts.Origins {
		if o == "*" {
			h.anyOrigin = true
		}
		h.origins[strings.ToLower(o)] = true
	}
	return h
}

// Routes lists the endpoints. They are public: the session's token in
// ?token= authenticates, since CDP clients send no other credentials.
func (h *Relay) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp", Handler: h.connect, Public: true, Name: "sessions.cdp"},
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp/json/version", Handler: h.version, Public: true, Name: "sessions.cdp.version"},
		// Playwright asks for the document with a trailing slash.
		{Method: http.MethodGet, Path: "/api/v1/sessions/{id}/cdp/json/version/", Handler: h.version, Public: true},
	}
}

// target checks the token before anything reaches a browser.
func (h *Relay) target(r *http.Request) (profiles.CDPTarget, error) {
	return h.svc.CDPTarget(r.Context(), mux.Vars(r)["id"], r.URL.Query().Get("token"))
}

// checkOrigin lets a page open a CDP connection only from the service's
// own origin or one configured: a page elsewhere that learnt a cdpUrl
// must not drive the browser from a visitor's machine.
func (h *Relay) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" || h.anyOrigin || h.origins[strings.ToLower(origin)] {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return domain.Forbidden("pages of origin " + origin + " may not open a CDP connection (CORS_ORIGINS lists the origins that may)")
}

// reserve takes one of the instance's relayed connections.
func (h *Relay) reserve() (func(), error) {
	if n := h.open.Add(1); h.opts.MaxConnections > 0 && n > int64(h.opts.MaxConnections) {
		h.open.Add(-1)
		return nil, domain.Unavailable(fmt.Sprintf("this instance relays as many CDP connections as it may (%d, CDP_CONNECTIONS_MAX); retry later", h.opts.MaxConnections))
	}
	return sync.OnceFunc(func() { h.open.Add(-1) }), nil
}

func (h *Relay) connect(w http.ResponseWriter, r *http.Request) error {
	if err := h.checkOrigin(r); err != nil {
		return err
	}
	target, err := h.target(r)
	if err != nil {
		return err
	}
	if !isWebSocketUpgrade(r) {
		return domain.BadRequest("the cdpUrl is a WebSocket: connect with Upgrade: websocket")
	}
	free, err := h.reserve()
	if err != nil {
		return err
	}
	defer free()
	if target.Node != "" {
		return h.relay(w, r, target.Node)
	}
	conn, err := target.Connect(r.Context())
	if err != nil {
		if domain.KindOf(err) != domain.KindInternal {
			return err
		}
		httpapi.RequestLogger(r.Context()).Warn("cdp relay could not connect to the browser", zap.Error(err))
		return domain.Unavailable("the session's browser did not answer; retry later")
	}
	defer conn.Close()
	liftDeadlines(w, r)
	// The origin is checked above, with the service's own rules. Accept
	// writes its 101 through the ResponseWriter, so the access log and the
	// metrics see it.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		// Accept has answered the client.
		return nil
	}
	ws.SetReadLimit(cdpMaxClientMessage)
	pumpCDP(ws, conn)
	return nil
}

// pumpCDP carries messages both ways until either side ends.
func pumpCDP(ws *websocket.Conn, conn profiles.CDPConn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		for {
			msg, err := conn.Receive(ctx)
			if err != nil {
				if ctx.Err() == nil {
					_ = ws.Close(websocket.StatusGoingAway, "the session's browser is gone")
				}
				return
			}
			if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
				return
			}
		}
	}()
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			break
		}
		if err := conn.Send(ctx, msg); err != nil {
			_ = ws.Close(websocket.StatusGoingAway, "the session's browser is gone")
			break
		}
	}
	cancel()
	_ = conn.Close()
	_ = ws.CloseNow()
	<-done
}

func (h *Relay) version(w http.ResponseWriter, r *http.Request) error {
	target, err := h.target(r)
	if err != nil {
		return err
	}
	if target.Node != "" {
		return h.relay(w, r, target.Node)
	}
	public, err := publicCDPURL(h.opts.PublicURL(), mux.Vars(r)["id"], r.URL.Query().Get("token"))
	if err != nil {
		return err
	}
	doc, err := browserVersion(r.Context(), target)
	if err != nil {
		if domain.KindOf(err) != domain.KindInternal {
			return err
		}
		if r.Context().Err() == nil {
			httpapi.RequestLogger(r.Context()).Warn("browser did not answer Browser.getVersion", zap.Error(err))
		}
		return domain.Unavailable("the session's browser did not answer; retry later")
	}
	doc["webSocketDebuggerUrl"] = public
	// The document carries the session's token.
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteBody(w, http.StatusOK, doc)
	return nil
}

// browserVersion asks the browser for what a DevTools /json/version
// document tells.
func browserVersion(ctx context.Context, target profiles.CDPTarget) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, cdpAnswerTimeout)
	defer cancel()
	conn, err := target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.Send(ctx, []byte(`{"id":`+strconv.Itoa(cdpVersionID)+`,"method":"Browser.getVersion"}`)); err != nil {
		return nil, err
	}
	for {
		raw, err := conn.Receive(ctx)
		if err != nil {
			return nil, err
		}
		var answer struct {
			ID     int64 `json:"id"`
			Result *struct {
				ProtocolVersion string `json:"protocolVersion"`
				Product         string `json:"product"`
				Revision        string `json:"revision"`
				UserAgent       string `json:"userAgent"`
				JSVersion       string `json:"jsVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(raw, &answer) != nil || answer.ID != cdpVersionID {
			continue
		}
		if answer.Result == nil {
			return nil, fmt.Errorf("Browser.getVersion answered %s", raw)
		}
		res := answer.Result
		return map[string]string{
			"Browser": res.Product, "Protocol-Version": res.ProtocolVersion, "User-Agent": res.UserAgent,
			"V8-Version": res.JSVersion, "WebKit-Version": "537.36 (" + res.Revision + ")",
		}, nil
	}
}

// relay hands the request as it came, token included, to the instance that
// runs the session's browser, and its answer back.
func (h *Relay) relay(w http.ResponseWriter, r *http.Request, node string) error {
	if r.Header.Get(relayedHeader) != "" {
		httpapi.RequestLogger(r.Context()).Warn("cdp relay refused a second hop", zap.String("node", node))
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
		liftDeadlines(w, r)
	}
	log := httpapi.RequestLogger(r.Context())
	// The proxy's failure is returned, so that the transport's one error
	// mapper answers it as it answers every other.
	var failed error
	// httputil.ReverseProxy carries an upgraded connection both ways once
	// the target answers 101, and relays any other answer as it is.
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			for _, k := range credentialHeaders {
				pr.Out.Header.Del(k)
			}
			pr.Out.Header.Set(relayedHeader, "1")
			// This instance checked the page's origin; the owner, reached
			// at its NODE_URL, would take the service's own origin for
			// another.
			pr.Out.Header.Del("Origin")
		},
		Transport: h.transport,
		ErrorLog:  zap.NewStdLog(log.Named("cdp")),
		ModifyResponse: func(res *http.Response) error {
			if res.StatusCode == http.StatusSwitchingProtocols {
				// The proxy writes the 101 on the hijacked connection,
				// past the transport's access log and metrics.
				httpapi.NoteSwitchedProtocols(w)
			}
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				// The client went away; nobody is left to answer.
				return
			}
			log.Warn("cdp relay failed", zap.Error(err))
			failed = domain.Unavailable("the session's browser did not answer; retry later")
		},
	}
	proxy.ServeHTTP(w, r)
	return failed
}

// liftDeadlines clears the server's read and write deadlines, meant for one
// request, on a connection about to carry a WebSocket that lives as long as
// its client. Hijacking a connection does not promise to clear them.
func liftDeadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		httpapi.RequestLogger(r.Context()).Warn("could not lift the deadlines of a cdp connection: " + err.Error())
	}
}

func isWebSocketUpgrade(r *http.Request) bool {
	return httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
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
