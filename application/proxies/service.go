// Package proxies owns the proxy use cases: a team's proxy pool (with
// passwords sealed at rest), tests of a proxy through the network before it
// is stored, and checks of a stored proxy whose result is kept. Every change
// writes its event to the outbox in the same transaction.
package proxies

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/proxystore"
)

// Policy holds the module's limits.
type Policy struct {
	// AllowPrivateTargets skips the host check at save (development and
	// tests); the prober applies the same setting at dial time.
	AllowPrivateTargets bool
	// MaxProxies bounds a team's proxies; 0 is no bound.
	MaxProxies int
	// ProbesPerMinute bounds a team's tests and checks together.
	ProbesPerMinute int
}

// Deps are the ports the service needs.
type Deps struct {
	Tx      ports.UnitOfWork
	Teams   TeamLock
	Proxies proxystore.Proxies
	Outbox  ports.Outbox
	Prober  ports.ProxyProber
	Box     ports.SecretBox
	Limiter ports.RateLimiter
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Policy  Policy
}

// TeamLock takes a team's lock for the rest of the unit of work
// (teamstore.Teams has it), so that counting a team's proxies and adding
// one is atomic across instances.
type TeamLock interface {
	Lock(ctx context.Context, teamID string) error
}

// Service runs the proxy use cases.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service {
	if d.Policy.ProbesPerMinute <= 0 {
		d.Policy.ProbesPerMinute = 30
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{d: d}
}

// Input is a proxy as a client gives it.
type Input = proxy.Input

// spec checks the input and the host.
func (s *Service) spec(ctx context.Context, in Input) (proxy.Spec, error) {
	var sp proxy.Spec
	var err error
	if in.URL != "" {
		sp, err = proxy.ParseURL(in.URL)
		if err == nil && in.Name != "" {
			sp.Name = in.Name
			sp, err = sp.Check()
		}
	} else {
		sp, err = proxy.Spec{Name: in.Name, Type: in.Type, Host: in.Host, Port: in.Port, Username: in.Username, Password: in.Password}.Check()
	}
	if err != nil {
		return proxy.Spec{}, err
	}
	if err := s.checkHost(ctx, sp.Host); err != nil {
		return proxy.Spec{}, err
	}
	return sp, nil
}

// checkHost refuses a host the prober would not connect to.
func (s *Service) checkHost(ctx context.Context, host string) error {
	if s.d.Policy.AllowPrivateTargets {
		return nil
	}
	if err := s.d.Prober.CheckHost(ctx, host); err != nil {
		return domain.Invalid("host", err.Error())
	}
	return nil
}

// Prepare checks in and returns it as a new proxy of the actor's team, not
// yet stored, its password sealed: what Add stores, and what a profile
// given an inline proxy stores in its own unit of work with Store.
func (s *Service) Prepare(ctx context.Context, actor team.Actor, in Input) (proxy.Proxy, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return proxy.Proxy{}, err
	}
	sp, err := s.spec(ctx, in)
	if err != nil {
		return proxy.Proxy{}, err
	}
	var sealed []byte
	if sp.Password != "" {
		if sealed, err = s.d.Box.Seal([]byte(sp.Password)); err != nil {
			return proxy.Proxy{}, err
		}
	}
	return proxy.New(s.d.IDs.New("prx"), actor.TeamID, sp, sealed, s.d.Clock.Now()), nil
}

// Store stores a prepared proxy within the team's quota and emits
// proxy.added, in the caller's unit of work.
func (s *Service) Store(ctx context.Context, p proxy.Proxy) error {
	if err := s.d.Teams.Lock(ctx, p.TeamID); err != nil {
		return err
	}
	n, err := s.d.Proxies.Count(ctx, p.TeamID)
	if err != nil {
		return err
	}
	if err := team.CheckQuota(n, s.d.Policy.MaxProxies, "proxies"); err != nil {
		return err
	}
	if err := s.d.Proxies.Create(ctx, p); err != nil {
		return err
	}
	return s.emit(ctx, p, event.ProxyAdded, nil)
}

// Add stores a new proxy of the actor's team.
func (s *Service) Add(ctx context.Context, actor team.Actor, in Input) (proxy.Proxy, error) {
	p, err := s.Prepare(ctx, actor, in)
	if err != nil {
		return proxy.Proxy{}, err
	}
	if err := s.d.Tx.Do(ctx, func(ctx context.Context) error { return s.Store(ctx, p) }); err != nil {
		return proxy.Proxy{}, err
	}
	return p, nil
}

// Get returns a proxy of the actor's team.
func (s *Service) Get(ctx context.Context, actor team.Actor, id string) (proxy.Proxy, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return proxy.Proxy{}, err
	}
	return s.d.Proxies.ByID(ctx, actor.TeamID, id)
}

// Lookup returns a proxy of the team, for the profiles module (which has
// checked its actor).
func (s *Service) Lookup(ctx context.Context, teamID, id string) (proxy.Proxy, error) {
	return s.d.Proxies.ByID(ctx, teamID, id)
}

// List returns a page of the team's proxies, newest first, optionally of
// one status.
func (s *Service) List(ctx context.Context, actor team.Actor, status, cursor string, limit int) (paging.Page[proxy.Proxy], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[proxy.Proxy]{}, err
	}
	f := proxystore.Filter{BeforeID: cursor, Limit: limit + 1}
	if status != "" {
		st, ok := proxy.ParseStatus(status)
		if !ok {
			return paging.Page[proxy.Proxy]{}, domain.BadRequest("status must be unknown, ok or failed")
		}
		f.Status = st
	}
	if err := paging.CheckCursor(cursor, "prx_"); err != nil {
		return paging.Page[proxy.Proxy]{}, err
	}
	ps, err := s.d.Proxies.List(ctx, actor.TeamID, f)
	if err != nil {
		return paging.Page[proxy.Proxy]{}, err
	}
	return paging.Cut(ps, limit, func(p proxy.Proxy) string { return p.ID }), nil
}

// UpdateInput is a partial update: nil fields stay; an empty Password
// removes the password.
type UpdateInput struct {
	Name     *string
	Type     *string
	Host     *string
	Port     *int
	Username *string
	Password *string
}

// Update changes a proxy of the actor's team.
func (s *Service) Update(ctx context.Context, actor team.Actor, id string, in UpdateInput) (proxy.Proxy, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return proxy.Proxy{}, err
	}
	cur, err := s.d.Proxies.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return proxy.Proxy{}, err
	}
	v := &domain.Validation{}
	var ch proxy.Change
	if in.Name != nil {
		proxy.CheckName(v, *in.Name)
		ch.Name = in.Name
	}
	if in.Type != nil {
		proxy.CheckType(v, *in.Type)
		t := proxy.Type(*in.Type)
		ch.Type = &t
	}
	if in.Host != nil {
		h := proxy.CheckHost(v, *in.Host)
		ch.Host = &h
	}
	if in.Port != nil {
		proxy.CheckPort(v, *in.Port)
		ch.Port = in.Port
	}
	var user, pass string
	if in.Username != nil {
		user = *in.Username
		ch.Username = in.Username
	}
	if in.Password != nil {
		pass = *in.Password
	}
	proxy.CheckCredentials(v, user, pass)
	if err := v.Err(); err != nil {
		return proxy.Proxy{}, err
	}
	if ch.Host != nil {
		if err := s.checkHost(ctx, *ch.Host); err != nil {
			return proxy.Proxy{}, err
		}
	}
	if in.Password != nil {
		if pass == "" {
			ch.ClearPassword = true
		} else if ch.PasswordSealed, err = s.d.Box.Seal([]byte(pass)); err != nil {
			return proxy.Proxy{}, err
		}
	}
	next := cur.Change(ch, s.d.Clock.Now())
	if err := s.d.Proxies.Update(ctx, next); err != nil {
		return proxy.Proxy{}, err
	}
	return next, nil
}

// Delete removes a proxy of the actor's team; a conflict while a profile
// uses it.
func (s *Service) Delete(ctx context.Context, actor team.Actor, id string) error {
	if err := actor.Require(team.ActDelete); err != nil {
		return err
	}
	// The team's lock orders the delete with a profile taking the proxy
	// (profiles take it too), so neither misses the other across instances.
	return s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Teams.Lock(ctx, actor.TeamID); err != nil {
			return err
		}
		return s.d.Proxies.Delete(ctx, actor.TeamID, id)
	})
}

// Test probes a proxy that is not stored; nothing is kept.
func (s *Service) Test(ctx context.Context, actor team.Actor, in Input) (proxy.Check, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return proxy.Check{}, err
	}
	sp, err := s.spec(ctx, in)
	if err != nil {
		return proxy.Check{}, err
	}
	if err := s.throttle(ctx, actor.TeamID); err != nil {
		return proxy.Check{}, err
	}
	return s.probe(ctx, ports.ProxyTarget{Type: sp.Type, Host: sp.Host, Port: sp.Port, Username: sp.Username, Password: sp.Password}), nil
}

// Check probes a stored proxy, keeps the result as its last check and
// status, and emits proxy.failed when it failed. A proxy whose address
// changed while the probe ran keeps the newer settings and no result.
func (s *Service) Check(ctx context.Context, actor team.Actor, id string) (proxy.Check, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return proxy.Check{}, err
	}
	p, err := s.d.Proxies.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return proxy.Check{}, err
	}
	if err := s.throttle(ctx, actor.TeamID); err != nil {
		return proxy.Check{}, err
	}
	target, err := s.target(p)
	if err != nil {
		return proxy.Check{}, err
	}
	c := s.probe(ctx, target)
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		cur, err := s.d.Proxies.ByID(ctx, actor.TeamID, id)
		if err != nil {
			return err
		}
		if !sameAddress(cur, p) {
			return nil
		}
		next := cur.Record(c)
		if err := s.d.Proxies.Update(ctx, next); err != nil {
			return err
		}
		if c.OK {
			return nil
		}
		return s.emit(ctx, next, event.ProxyFailed, map[string]any{"error": c.Error})
	})
	if err != nil {
		return proxy.Check{}, err
	}
	if c.OK {
		s.d.Log.DebugContext(ctx, "proxy checked", "team_id", p.TeamID, "proxy_id", p.ID)
	} else {
		s.d.Log.WarnContext(ctx, "proxy check failed", "team_id", p.TeamID, "proxy_id", p.ID, "error", c.Error)
	}
	return c, nil
}

// target is how to reach p, its password opened.
func (s *Service) target(p proxy.Proxy) (ports.ProxyTarget, error) {
	target := ports.ProxyTarget{Type: string(p.Type), Host: p.Host, Port: p.Port, Username: p.Username}
	if p.HasPassword() {
		pw, err := s.d.Box.Open(p.PasswordSealed)
		if err != nil {
			return ports.ProxyTarget{}, err
		}
		target.Password = string(pw)
	}
	return target, nil
}

// Target returns a proxy of the team and how to reach it, password
// included, for a browser that is to go through it; another team's proxy
// is not found.
func (s *Service) Target(ctx context.Context, teamID, id string) (proxy.Proxy, ports.ProxyTarget, error) {
	p, err := s.d.Proxies.ByID(ctx, teamID, id)
	if err != nil {
		return proxy.Proxy{}, ports.ProxyTarget{}, err
	}
	t, err := s.target(p)
	return p, t, err
}

func sameAddress(a, b proxy.Proxy) bool {
	return a.Type == b.Type && a.Host == b.Host && a.Port == b.Port && a.Username == b.Username &&
		bytes.Equal(a.PasswordSealed, b.PasswordSealed)
}

func (s *Service) probe(ctx context.Context, t ports.ProxyTarget) proxy.Check {
	r := s.d.Prober.Probe(ctx, t)
	return proxy.Check{CheckedAt: s.d.Clock.Now().UTC(), OK: r.OK, LatencyMs: r.Latency.Milliseconds(),
		ExitIP: r.ExitIP, Country: r.Country, City: r.City, Timezone: r.Timezone, Error: r.Error}
}

// throttle counts one probe against the team's budget.
func (s *Service) throttle(ctx context.Context, teamID string) error {
	dec, err := s.d.Limiter.Hit(ctx, "proxyprobe:team:"+teamID, s.d.Policy.ProbesPerMinute, time.Minute)
	if err != nil {
		return err
	}
	if !dec.Allowed {
		return domain.RateLimited("too many proxy tests and checks for this team; try again later", max(dec.RetryAfter, time.Second))
	}
	return nil
}

func (s *Service) emit(ctx context.Context, p proxy.Proxy, typ event.Type, extra map[string]any) error {
	data := map[string]any{"proxy": p.EventView()}
	for k, v := range extra {
		data[k] = v
	}
	e, err := event.New(s.d.IDs.New("evt"), p.TeamID, typ, s.d.Clock.Now(), data)
	if err != nil {
		return err
	}
	return s.d.Outbox.Append(ctx, e)
}
