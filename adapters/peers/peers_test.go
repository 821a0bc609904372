package peers_test

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/peers"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

const secret = "fleet-secret-key-0123456789abcdef0123456789"

var (
	t0    = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	alice = team.Actor{UserID: "usr_alice", TeamID: "team_1", MemberID: "mem_alice", Role: team.RoleMember, APIKeyID: "key_1"}
	ttl   = 600
)

// service records what the endpoints ran; err makes them fail.
type service struct {
	mu       sync.Mutex
	launches []ports.PlacedLaunch
	releases []ports.PlacedRelease
	err      error
}

func (s *service) LaunchPlaced(_ context.Context, l ports.PlacedLaunch) (ports.PlacedSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launches = append(s.launches, l)
	if s.err != nil {
		return ports.PlacedSession{}, s.err
	}
	return ports.PlacedSession{SessionID: "ses_1", Token: "tok_1"}, nil
}

func (s *service) ReleasePlaced(_ context.Context, r ports.PlacedRelease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releases = append(s.releases, r)
	return s.err
}

func (s *service) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.launches) + len(s.releases)
}

// peer is an instance's endpoints at node, over svc.
type peer struct {
	url    string
	svc    *service
	failed []error
}

func newPeer(t *testing.T, key []byte) *peer {
	t.Helper()
	p := &peer{svc: &service{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	h := peers.NewHandler(key, func() string { return srv.URL }, clock.NewFake(t0), p.svc, func(_ *http.Request, err error) { p.failed = append(p.failed, err) })
	mux.HandleFunc("POST "+peers.LaunchPath, h.Launch)
	mux.HandleFunc("POST "+peers.ReleasePath, h.Release)
	return p
}

func key(t *testing.T, s string) []byte {
	t.Helper()
	k, err := peers.Key([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestALaunchAndAReleaseCrossToTheOtherInstance(t *testing.T) {
	t.Parallel()
	k := key(t, secret)
	p := newPeer(t, k)
	c := peers.NewClient(k, clock.NewFake(t0))
	got, err := c.LaunchOn(context.Background(), p.url, ports.PlacedLaunch{Actor: alice, ProfileID: "prf_1", Headless: true, TTLSeconds: &ttl})
	if err != nil || got != (ports.PlacedSession{SessionID: "ses_1", Token: "tok_1"}) {
		t.Fatalf("LaunchOn = %+v, %v", got, err)
	}
	l := p.svc.launches[0]
	if l.Actor != alice || l.ProfileID != "prf_1" || !l.Headless || l.TTLSeconds == nil || *l.TTLSeconds != ttl {
		t.Fatalf("the instance ran launch %+v", l)
	}
	if err := c.ReleaseOn(context.Background(), p.url, ports.PlacedRelease{Actor: alice, ProfileID: "prf_1", SessionID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	if r := p.svc.releases[0]; r != (ports.PlacedRelease{Actor: alice, ProfileID: "prf_1", SessionID: "ses_1"}) {
		t.Fatalf("the instance ran release %+v", r)
	}
}

func TestARefusalComesBackAsTheDomainErrorItWas(t *testing.T) {
	t.Parallel()
	k := key(t, secret)
	p := newPeer(t, k)
	c := peers.NewClient(k, clock.NewFake(t0))
	cases := []*domain.Error{
		domain.Conflict("profile is running, launched by bob@example.com"),
		domain.Forbidden("your role in this team does not allow this action"),
		domain.NotFound("profile"),
		domain.Invalid("ttlSeconds", "must be from 1 to 86400"),
		domain.RateLimited("slow down", 1500*time.Millisecond),
		domain.Unavailable("this instance is draining and starts no more browsers; retry later"),
	}
	for _, want := range cases {
		p.svc.err = want
		_, err := c.LaunchOn(context.Background(), p.url, ports.PlacedLaunch{Actor: alice, ProfileID: "prf_1"})
		var got *domain.Error
		if !errors.As(err, &got) || got.Kind != want.Kind || got.Message != want.Message || got.RetryAfter != want.RetryAfter ||
			len(got.Fields) != len(want.Fields) || (len(want.Fields) > 0 && got.Fields[0] != want.Fields[0]) {
			t.Errorf("refused with %#v, the placing instance got %#v", want, err)
		}
	}
}

func TestAnInstancesOwnFailureIsNotCarriedToTheOther(t *testing.T) {
	t.Parallel()
	k := key(t, secret)
	p := newPeer(t, k)
	p.svc.err = errors.New("disk /var/lib/profilesvc full")
	c := peers.NewClient(k, clock.NewFake(t0))
	_, err := c.LaunchOn(context.Background(), p.url, ports.PlacedLaunch{Actor: alice, ProfileID: "prf_1"})
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindUnavailable || strings.Contains(de.Message, "disk") {
		t.Fatalf("an internal failure over there: %#v; want unavailable, without its details", err)
	}
	if len(p.failed) != 1 {
		t.Fatalf("the failing instance was told of %d failures; want 1", len(p.failed))
	}
}

// signed is a request to path of the instance at node, signed as an
// instance would, computed here from the rules: HKDF-SHA256 of the secret,
// HMAC over path, time, node and body. It is sent to to.
func signed(t *testing.T, to, secretKey, path, node string, at time.Time, body string) *http.Request {
	t.Helper()
	k, err := hkdf.Key(sha256.New, []byte(secretKey), nil, "profilesvc fleet peers v1 hmac-sha256", 32)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(path + "\n" + ts + "\n" + node + "\n" + body))
	req, _ := http.NewRequest(http.MethodPost, to+path, strings.NewReader(body))
	req.Header.Set("X-Profilesvc-Fleet-Time", ts)
	req.Header.Set("X-Profilesvc-Fleet-Signature", hex.EncodeToString(m.Sum(nil)))
	return req
}

func TestEveryRequestNotSignedForThisInstanceNowIsRefused(t *testing.T) {
	t.Parallel()
	p := newPeer(t, key(t, secret))
	launch := `{"actor":{"userId":"usr_mallory","teamId":"team_1","memberId":"","role":"owner","apiKeyId":""},"profileId":"prf_1","headless":true,"ttlSeconds":null}`
	release := `{"actor":{"userId":"usr_mallory","teamId":"team_1","memberId":"","role":"owner","apiKeyId":""},"profileId":"prf_1","sessionId":"ses_1"}`
	// The rules, followed: the instance runs it.
	res, err := http.DefaultClient.Do(signed(t, p.url, secret, peers.LaunchPath, p.url, t0, launch))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("a request signed by the rules: %v %v", res, err)
	}
	res.Body.Close()
	attacks := map[string]*http.Request{
		"no signature": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, p.url+peers.LaunchPath, strings.NewReader(launch))
			return r
		}(),
		"another fleet's key":     signed(t, p.url, "another-fleet-secret-key-0123456789abcdef", peers.LaunchPath, p.url, t0, launch),
		"signed for another node": signed(t, p.url, secret, peers.LaunchPath, "http://other-instance.test:8080", t0, launch),
		"31 s old":                signed(t, p.url, secret, peers.LaunchPath, p.url, t0.Add(-31*time.Second), launch),
		"31 s ahead":              signed(t, p.url, secret, peers.LaunchPath, p.url, t0.Add(31*time.Second), launch),
		"signed for the release":  signed(t, p.url, secret, peers.ReleasePath, p.url, t0, release),
	}
	// The last two go to the endpoint they were not signed for, or with
	// a body they were not signed over.
	attacks["signed for the release"].URL.Path = peers.LaunchPath
	altered := signed(t, p.url, secret, peers.LaunchPath, p.url, t0, launch)
	altered.Body, altered.ContentLength = nopCloser(strings.Replace(launch, "prf_1", "prf_2", 1)), int64(len(launch))
	attacks["a signed launch, altered"] = altered
	for name, req := range attacks {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d; want 401", name, res.StatusCode)
		}
	}
	if n := p.svc.calls(); n != 1 {
		t.Fatalf("the instance ran %d requests; want only the one signed by the rules", n)
	}
}

func TestAMalformedSignedRequestIsRefused(t *testing.T) {
	t.Parallel()
	p := newPeer(t, key(t, secret))
	for name, c := range map[string]struct {
		body string
		want int
	}{
		"an unknown member": {`{"actor":{},"profileId":"prf_1","headless":true,"ttlSeconds":null,"proxy":"socks5://evil"}`, http.StatusBadRequest},
		"not JSON":          {`launch prf_1`, http.StatusBadRequest},
		"too large":         {`{"profileId":"` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		res, err := http.DefaultClient.Do(signed(t, p.url, secret, peers.LaunchPath, p.url, t0, c.body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: %d; want %d", name, res.StatusCode, c.want)
		}
	}
	if n := p.svc.calls(); n != 0 {
		t.Fatalf("the instance ran %d malformed requests", n)
	}
}

func TestAnInstanceThatDoesNotAnswerAsOneIsUnavailable(t *testing.T) {
	t.Parallel()
	k := key(t, secret)
	c := peers.NewClient(k, clock.NewFake(t0))
	balancer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>502 Bad Gateway</html>"))
	}))
	defer balancer.Close()
	// A fleet whose instances do not share SECRET_KEY: the other refuses
	// the signature, which is not the client's fault.
	stranger := newPeer(t, key(t, "another-fleet-secret-key-0123456789abcdef"))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, node := range map[string]string{"a balancer's 502": balancer.URL, "another key": stranger.url, "nothing listening": closed.URL} {
		_, err := c.LaunchOn(context.Background(), node, ports.PlacedLaunch{Actor: alice, ProfileID: "prf_1"})
		if !domain.IsKind(err, domain.KindUnavailable) {
			t.Errorf("%s: %v; want unavailable", name, err)
		}
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func nopCloser(s string) readCloser { return readCloser{bytes.NewReader([]byte(s))} }
