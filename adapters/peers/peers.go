// Package peers carries what one instance of the fleet asks of another: a
// launch to an instance with room for the browser, a release to the
// instance that runs it. It holds the client side (ports.Peers) and the
// endpoints that answer it, which the composition root mounts in the
// transport's route table: both sides are here, so the few fields that
// cross between instances are written once.
//
// Each request is signed with HMAC-SHA256 under a key derived from the
// SECRET_KEY every instance shares, over its path, its time, the instance
// it is meant for and its body: a client cannot forge one, and a captured
// one cannot be sent to another instance or endpoint, or kept for later.
package peers

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Peers = (*Client)(nil)

// LaunchPath is where an instance takes launches placed by another;
// ReleasePath where it takes releases of the sessions it runs.
const (
	LaunchPath  = "/internal/v1/launches"
	ReleasePath = "/internal/v1/releases"
)

const (
	timeHeader      = "X-Profilesvc-Fleet-Time"
	signatureHeader = "X-Profilesvc-Fleet-Signature"
	// keyInfo separates this key from anything else derived from
	// SECRET_KEY, so the same secret never serves as two keys.
	keyInfo = "profilesvc fleet peers v1 hmac-sha256"
	// maxSkew is how far the signed time may be from the receiver's
	// clock: the clocks of a fleet's machines agree to well within it.
	maxSkew = 30 * time.Second
	// maxBody bounds a request or its answer: a few hundred bytes.
	maxBody = 64 << 10
	// dialTimeout bounds reaching another instance, a short hop away;
	// answerTimeout the whole launch there, which starts a browser, or
	// release, which stores a browser's data.
	dialTimeout   = 10 * time.Second
	answerTimeout = 2 * time.Minute
)

// Key derives the fleet's signing key from the service's SECRET_KEY.
func Key(secret []byte) ([]byte, error) {
	if len(secret) == 0 {
		return nil, errors.New("peers: empty secret")
	}
	return hkdf.Key(sha256.New, secret, nil, keyInfo, 32)
}

// launchWire is a placed launch between instances.
type launchWire struct {
	Actor      actorWire `json:"actor"`
	ProfileID  string    `json:"profileId"`
	Headless   bool      `json:"headless"`
	TTLSeconds *int      `json:"ttlSeconds"`
}

type actorWire struct {
	UserID   string `json:"userId"`
	TeamID   string `json:"teamId"`
	MemberID string `json:"memberId"`
	Role     string `json:"role"`
	APIKeyID string `json:"apiKeyId"`
}

// releaseWire is a release between instances.
type releaseWire struct {
	Actor     actorWire `json:"actor"`
	ProfileID string    `json:"profileId"`
	SessionID string    `json:"sessionId"`
}

// answerWire is the answer: the session a launch started (nothing for a
// release), or the refusal as the domain error it was.
type answerWire struct {
	SessionID string     `json:"sessionId,omitempty"`
	Token     string     `json:"token,omitempty"`
	Error     *errorWire `json:"error,omitempty"`
}

type errorWire struct {
	Kind         string      `json:"kind"`
	Message      string      `json:"message"`
	Fields       []fieldWire `json:"fields,omitempty"`
	RetryAfterMs int64       `json:"retryAfterMs,omitempty"`
}

type fieldWire struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// kinds name the domain's kinds on the wire, so that instances of two
// builds (a rolling deploy) read each other's refusals alike.
var kinds = map[domain.Kind]string{
	domain.KindInternal:           "internal",
	domain.KindBadRequest:         "bad_request",
	domain.KindUnauthorized:       "unauthorized",
	domain.KindForbidden:          "forbidden",
	domain.KindNotFound:           "not_found",
	domain.KindConflict:           "conflict",
	domain.KindPreconditionFailed: "precondition_failed",
	domain.KindValidation:         "validation",
	domain.KindRateLimited:        "rate_limited",
	domain.KindUnavailable:        "unavailable",
}

func kindNamed(name string) (domain.Kind, bool) {
	for k, n := range kinds {
		if n == name {
			return k, true
		}
	}
	return 0, false
}

// sign is the signature of body sent to path at t, to the instance at
// node.
func sign(key []byte, path, t, node string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(path))
	m.Write([]byte{'\n'})
	m.Write([]byte(t))
	m.Write([]byte{'\n'})
	m.Write([]byte(node))
	m.Write([]byte{'\n'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Client places launches on other instances.
type Client struct {
	key  []byte
	http *http.Client
	now  func() time.Time
}

// NewClient returns a client signing with key (Key's).
func NewClient(key []byte, clock ports.Clock) *Client {
	transport := &http.Transport{
		// No proxy from the environment: the targets are the other
		// instances, which a proxy cannot reach.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: answerTimeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Client{
		key: key, now: clock.Now,
		http: &http.Client{
			Transport: transport, Timeout: answerTimeout,
			// An instance answers itself; a redirect is not one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

func wireActor(a team.Actor) actorWire {
	return actorWire{UserID: a.UserID, TeamID: a.TeamID, MemberID: a.MemberID, Role: string(a.Role), APIKeyID: a.APIKeyID}
}

func (a actorWire) actor() team.Actor {
	return team.Actor{UserID: a.UserID, TeamID: a.TeamID, MemberID: a.MemberID, Role: team.Role(a.Role), APIKeyID: a.APIKeyID}
}

// LaunchOn sends the launch to the instance at node and returns its
// answer.
func (c *Client) LaunchOn(ctx context.Context, node string, l ports.PlacedLaunch) (ports.PlacedSession, error) {
	ans, err := c.call(ctx, node, LaunchPath, launchWire{
		Actor: wireActor(l.Actor), ProfileID: l.ProfileID, Headless: l.Headless, TTLSeconds: l.TTLSeconds,
	})
	if err != nil {
		return ports.PlacedSession{}, err
	}
	if ans.SessionID == "" || ans.Token == "" {
		return ports.PlacedSession{}, unreachable(node, errors.New("answered a launch without a session"))
	}
	return ports.PlacedSession{SessionID: ans.SessionID, Token: ans.Token}, nil
}

// ReleaseOn sends the release to the instance at node.
func (c *Client) ReleaseOn(ctx context.Context, node string, r ports.PlacedRelease) error {
	_, err := c.call(ctx, node, ReleasePath, releaseWire{Actor: wireActor(r.Actor), ProfileID: r.ProfileID, SessionID: r.SessionID})
	return err
}

// call posts req, signed, to path at node and returns the answer, or the
// refusal as an error.
func (c *Client) call(ctx context.Context, node, path string, req any) (answerWire, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return answerWire{}, fmt.Errorf("peers: encode: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(node, "/")+path, bytes.NewReader(body))
	if err != nil {
		return answerWire{}, unreachable(node, err)
	}
	t := strconv.FormatInt(c.now().Unix(), 10)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(timeHeader, t)
	hreq.Header.Set(signatureHeader, sign(c.key, path, t, node, body))
	res, err := c.http.Do(hreq)
	if err != nil {
		return answerWire{}, unreachable(node, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return answerWire{}, unreachable(node, err)
	}
	var ans answerWire
	if err := json.Unmarshal(raw, &ans); err != nil {
		return answerWire{}, unreachable(node, fmt.Errorf("answered %d with something else than an instance's answer", res.StatusCode))
	}
	if ans.Error != nil {
		return answerWire{}, refusal(node, *ans.Error)
	}
	if res.StatusCode != http.StatusOK {
		return answerWire{}, unreachable(node, fmt.Errorf("answered %d", res.StatusCode))
	}
	return ans, nil
}

// unreachable is an instance that gave no answer of its own: the launch
// may go to another.
func unreachable(node string, err error) error {
	return &domain.Error{Kind: domain.KindUnavailable, Message: "another instance of the fleet did not answer; retry later",
		Err: fmt.Errorf("instance %s: %w", node, err)}
}

// refusal is the domain error another instance refused the launch with.
// An instance that refused the signature is a fleet whose instances do not
// share SECRET_KEY, not a client without credentials.
func refusal(node string, e errorWire) error {
	kind, ok := kindNamed(e.Kind)
	if !ok || kind == domain.KindUnauthorized || kind == domain.KindInternal {
		return unreachable(node, fmt.Errorf("refused the launch: %s: %s", e.Kind, e.Message))
	}
	out := &domain.Error{Kind: kind, Message: e.Message, RetryAfter: time.Duration(e.RetryAfterMs) * time.Millisecond}
	for _, f := range e.Fields {
		out.Fields = append(out.Fields, domain.FieldIssue{Field: f.Field, Issue: f.Issue})
	}
	return out
}

// Service is what the endpoints run on this instance
// (profiles.Service has it).
type Service interface {
	LaunchPlaced(ctx context.Context, l ports.PlacedLaunch) (ports.PlacedSession, error)
	ReleasePlaced(ctx context.Context, r ports.PlacedRelease) error
}

// Handler answers what the other instances ask: a launch at LaunchPath, a
// release at ReleasePath. It checks the signature before it reads the
// request.
type Handler struct {
	key  []byte
	node func() string
	now  func() time.Time
	svc  Service
	// failed is told of a request that failed for a reason of this
	// instance's (an internal error), which the answer does not carry.
	failed func(r *http.Request, err error)
}

// NewHandler returns the endpoints of the instance whose NODE_URL node
// returns: a request signed for another address is refused.
func NewHandler(key []byte, node func() string, clock ports.Clock, svc Service, failed func(r *http.Request, err error)) *Handler {
	return &Handler{key: key, node: node, now: clock.Now, svc: svc, failed: failed}
}

// Launch is the endpoint at LaunchPath.
func (h *Handler) Launch(w http.ResponseWriter, r *http.Request) {
	var l launchWire
	if !h.read(w, r, LaunchPath, &l) {
		return
	}
	placed, err := h.svc.LaunchPlaced(r.Context(), ports.PlacedLaunch{
		Actor: l.Actor.actor(), ProfileID: l.ProfileID, Headless: l.Headless, TTLSeconds: l.TTLSeconds,
	})
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	answer(w, http.StatusOK, answerWire{SessionID: placed.SessionID, Token: placed.Token})
}

// Release is the endpoint at ReleasePath.
func (h *Handler) Release(w http.ResponseWriter, r *http.Request) {
	var rel releaseWire
	if !h.read(w, r, ReleasePath, &rel) {
		return
	}
	err := h.svc.ReleasePlaced(r.Context(), ports.PlacedRelease{Actor: rel.Actor.actor(), ProfileID: rel.ProfileID, SessionID: rel.SessionID})
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	answer(w, http.StatusOK, answerWire{})
}

// read checks the request's signature for path and decodes its body into
// v; it answers the refusal itself and reports false.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, path string, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		answer(w, http.StatusRequestEntityTooLarge, answerWire{Error: &errorWire{Kind: "bad_request", Message: "the request is too large"}})
		return false
	}
	if !h.signed(r, path, body) {
		answer(w, http.StatusUnauthorized, answerWire{Error: &errorWire{Kind: "unauthorized",
			Message: "the request is not signed with this fleet's key, for this instance, now"}})
		return false
	}
	if err := json.Unmarshal(body, v, json.RejectUnknownMembers(true)); err != nil {
		answer(w, http.StatusBadRequest, answerWire{Error: &errorWire{Kind: "bad_request", Message: "the request cannot be read"}})
		return false
	}
	return true
}

// refuse answers err as the domain error it is; anything else is this
// instance's failure, logged and answered without its details.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindInternal {
		h.failed(r, err)
		answer(w, http.StatusInternalServerError, answerWire{Error: &errorWire{Kind: "internal", Message: "the instance failed"}})
		return
	}
	e := &errorWire{Kind: kinds[de.Kind], Message: de.Message, RetryAfterMs: de.RetryAfter.Milliseconds()}
	for _, f := range de.Fields {
		e.Fields = append(e.Fields, fieldWire{Field: f.Field, Issue: f.Issue})
	}
	answer(w, http.StatusConflict, answerWire{Error: e})
}

// signed checks the signature of body sent to path, for this instance,
// within maxSkew of now.
func (h *Handler) signed(r *http.Request, path string, body []byte) bool {
	t := r.Header.Get(timeHeader)
	sent, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return false
	}
	if skew := h.now().Sub(time.Unix(sent, 0)); skew > maxSkew || skew < -maxSkew {
		return false
	}
	got, err := hex.DecodeString(r.Header.Get(signatureHeader))
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(sign(h.key, path, t, h.node(), body))
	return hmac.Equal(got, want)
}

func answer(w http.ResponseWriter, status int, a answerWire) {
	body, err := json.Marshal(a)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"kind":"internal","message":"encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
