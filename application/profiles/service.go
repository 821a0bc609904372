// Package profiles owns the profile use cases: the template catalogue,
// profiles with their settings, and launch, heartbeat and release of the
// exclusive session a profile runs under, with the reaper that ends
// sessions whose lease ran out. Every change writes its event to the outbox
// in the same transaction.
package profiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// Policy holds the session lease lengths and the reaper's batch size.
type Policy struct {
	SessionTTLDefault time.Duration
	SessionTTLMax     time.Duration
	// ReapBatch is how many expired sessions the reaper reads at a time.
	ReapBatch int
	// UpdateAttempts bounds the retries of a PATCH without If-Match that
	// lost a race with another writer.
	UpdateAttempts int
	// MaxProfiles bounds a team's profiles; 0 is no bound.
	MaxProfiles int
	// PublicURL is the base of the URLs handed to clients (cdpUrl);
	// NodeURL is this instance's address as the other instances reach it.
	// Both are read when a browser starts: the listening address may be
	// known only then.
	PublicURL func() string
	NodeURL   func() string
	// BrowsersMax bounds the browsers this instance runs; 0 for a runtime
	// that runs none.
	BrowsersMax int
}

// Deps are the ports the service needs.
type Deps struct {
	Tx       ports.UnitOfWork
	Teams    TeamLock
	Profiles profilestore.Profiles
	Users    Users
	// Proxies is the team's proxy pool (application/proxies has it); nil
	// refuses every proxy.
	Proxies ProxyPool
	// Outbox takes the events of every write, in its unit of work.
	Outbox ports.Outbox
	// Metrics count the sessions committed; nil counts nothing.
	Metrics ports.SessionMetrics
	Runtime ports.BrowserRuntime
	// Blobs keeps browser data and cookies by content (a launch reads the
	// data from it); Data stores and reads them as the browserdata module
	// keeps them; BlobRefs records which of them may have lost their last
	// reference; Snapshots are the time machine's.
	Blobs     ports.BlobStore
	Data      BrowserData
	BlobRefs  BlobRefs
	Snapshots Snapshots
	Clock     ports.Clock
	IDs       ports.IDs
	Log       *slog.Logger
	Policy    Policy
	// Cache, when set, serves Get (see cache.go); nil reads the store.
	Cache profilestore.Cache
	// Fleet makes the service one instance of several; its zero value is
	// an instance alone.
	Fleet Fleet
	// EngineVersion is the version of the browser engine the runtime
	// runs ("156.0.8078.108"): user agents name it. "" (a runtime that
	// runs no browser) is profile.DefaultEngineVersion.
	EngineVersion string
}

// TeamLock takes a team's lock for the rest of the unit of work
// (teamstore.Teams has it), so that assigning a proxy is ordered with the
// proxy's deletion across instances.
type TeamLock interface {
	Lock(ctx context.Context, teamID string) error
}

// ProxyPool is what profiles use of the proxies module: the team's stored
// proxies, and inline proxies checked, sealed and stored in the profile's
// unit of work.
type ProxyPool interface {
	// Lookup returns a proxy of the team; another team's is not found.
	Lookup(ctx context.Context, teamID, id string) (proxy.Proxy, error)
	// Prepare checks a new proxy of the actor's team, without storing it.
	Prepare(ctx context.Context, actor team.Actor, in proxy.Input) (proxy.Proxy, error)
	// Store stores a prepared proxy (emitting proxy.added) in the caller's
	// unit of work.
	Store(ctx context.Context, p proxy.Proxy) error
	// Target returns a proxy of the team and how to reach it, password
	// included, for the browser of a launch.
	Target(ctx context.Context, teamID, id string) (proxy.Proxy, ports.ProxyTarget, error)
}

// BrowserData is what profiles use of the browserdata module
// (browserdata.Blobs has it): a launch hands the browser its cookies, and
// what a stopped browser leaves is stored as any upload.
type BrowserData interface {
	// Upload runs fn as an upload in progress, which the blob collector
	// waits for; PutArchive and PutCookies store only inside one.
	Upload(ctx context.Context, fn func(ctx context.Context) error) error
	// PutArchive stores a browser's directory, packed, cleaned as an
	// upload of browser data.
	PutArchive(ctx context.Context, archive io.Reader) (ports.BlobInfo, error)
	PutCookies(ctx context.Context, cs []browserdata.Cookie) (ports.BlobInfo, error)
	ReadCookies(ctx context.Context, c profile.Content) ([]browserdata.Cookie, error)
}

// BlobRefs is told of the content a profile no longer refers to
// (snapshotstore.BlobRefs has it), for the blob collector.
type BlobRefs interface {
	Release(ctx context.Context, at time.Time, sha256s ...string) error
}

// Snapshots are the time machine's snapshots (snapshotstore.Snapshots has
// them): a deleted profile's go in the same unit of work.
type Snapshots interface {
	// DeleteAll removes every snapshot of the profile and returns them.
	DeleteAll(ctx context.Context, teamID, profileID string) ([]snapshot.Snapshot, error)
}

// Users reads the users the accounts module owns (ports/accountstore): a
// conflict names the member who holds a session by email.
type Users interface {
	ByID(ctx context.Context, id string) (account.User, error)
}

// Service runs the profile use cases.
type Service struct {
	d  Deps
	b  browsers
	fl fleetState
	// templates are the catalogue's with their devices on this engine,
	// the same for the life of the service.
	templates []Template
}

// Template is a template of the catalogue with its representative device
// on the engine this instance runs.
type Template struct {
	profile.Template
	Device profile.Fingerprint
}

// New returns the service.
func New(d Deps) *Service {
	if d.Policy.ReapBatch <= 0 {
		d.Policy.ReapBatch = 100
	}
	if d.Policy.UpdateAttempts <= 0 {
		d.Policy.UpdateAttempts = 3
	}
	if d.Policy.PublicURL == nil {
		d.Policy.PublicURL = func() string { return "http://localhost" }
	}
	if d.Policy.NodeURL == nil {
		d.Policy.NodeURL = d.Policy.PublicURL
	}
	svc := &Service{b: browsers{local: map[string]localBrowser{}, stopped: make(chan struct{})}}
	if d.Metrics == nil {
		d.Metrics = uncounted{}
	}
	svc.d = d
	svc.fl.startedAt = d.Clock.Now()
	for _, t := range profile.Templates() {
		svc.templates = append(svc.templates, Template{Template: t, Device: t.Device(d.EngineVersion)})
	}
	if d.Policy.BrowsersMax > 0 {
		svc.b.slots = make(chan struct{}, d.Policy.BrowsersMax)
	}
	return svc
}

// Templates lists the built-in fingerprint templates; the caller may
// change the copy.
func (s *Service) Templates(actor team.Actor) ([]Template, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return nil, err
	}
	return slices.Clone(s.templates), nil
}

// Template returns one template.
func (s *Service) Template(actor team.Actor, id string) (Template, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return Template{}, err
	}
	for _, t := range s.templates {
		if t.ID == id {
			return t, nil
		}
	}
	return Template{}, domain.NotFound("template")
}

// device is a new device of t's kind, on this instance's engine, from a
// source of its own.
func (s *Service) device(t profile.Template) profile.Fingerprint {
	return profile.Generate(t, s.d.EngineVersion, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
}

// Create stores a new profile of the actor's team, with its inline proxy
// if it has one.
func (s *Service) Create(ctx context.Context, actor team.Actor, in profile.Settings) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	inline, err := s.prepareInline(ctx, actor, in.InlineProxy)
	if err != nil {
		return profile.Profile{}, err
	}
	if inline != nil {
		in.ProxyID = inline.ID
	}
	p, err := profile.New(s.d.IDs.New("prf"), actor.TeamID, actor.UserID, in, s.device, s.d.Clock.Now())
	if err != nil {
		return profile.Profile{}, err
	}
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		px, err := s.assignable(ctx, actor.TeamID, p.ProxyID, inline)
		if err != nil {
			return err
		}
		p.Proxy = proxyRef(px)
		if err := s.emit(ctx, p, event.ProfileCreated, nil); err != nil {
			return err
		}
		if px != nil {
			if err := s.emit(ctx, p, event.ProxyAssigned, map[string]any{"proxy": px.EventView()}); err != nil {
				return err
			}
		}
		// The unit's last write: Profiles.Create counts the profile under
		// the team's lock, held until the unit ends, which orders the
		// team's creates in every instance; the count includes this create
		// and every create that held the lock before it, committed.
		n, err := s.d.Profiles.Create(ctx, p)
		if err != nil {
			return err
		}
		return team.CheckQuota(n-1, s.d.Policy.MaxProfiles, "profiles")
	})
	if err != nil {
		return profile.Profile{}, err
	}
	return p, nil
}

// prepareInline checks an inline proxy before the unit of work starts (it
// may resolve the host).
func (s *Service) prepareInline(ctx context.Context, actor team.Actor, in *proxy.Input) (*proxy.Proxy, error) {
	if in == nil {
		return nil, nil
	}
	if s.d.Proxies == nil {
		return nil, domain.Invalid("proxy", "proxies are not available")
	}
	px, err := s.d.Proxies.Prepare(ctx, actor, *in)
	if err != nil {
		return nil, prefixFields(err, "proxy.")
	}
	return &px, nil
}

// prefixFields names the fields of a validation error of the inline proxy
// as fields of the profile's proxy.
func prefixFields(err error, prefix string) error {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) == 0 {
		return err
	}
	v := &domain.Validation{}
	for _, f := range de.Fields {
		v.Add(prefix+f.Field, f.Issue)
	}
	return v.Err()
}

// assignable stores the inline proxy, or requires proxyID to name a stored
// proxy of the team, in the caller's unit of work; nil for no proxy.
func (s *Service) assignable(ctx context.Context, teamID, proxyID string, inline *proxy.Proxy) (*proxy.Proxy, error) {
	switch {
	case inline != nil:
		if err := s.d.Proxies.Store(ctx, *inline); err != nil {
			return nil, err
		}
		return inline, nil
	case proxyID == "":
		return nil, nil
	case s.d.Proxies == nil:
		return nil, domain.Invalid("proxy.id", "must name a stored proxy of this team")
	}
	// The team's lock orders the assignment with a delete of the proxy
	// (which takes it too): the proxy read here is not deleted before the
	// profile that uses it commits.
	if err := s.d.Teams.Lock(ctx, teamID); err != nil {
		return nil, err
	}
	px, err := s.d.Proxies.Lookup(ctx, teamID, proxyID)
	if domain.IsKind(err, domain.KindNotFound) {
		return nil, domain.Invalid("proxy.id", "must name a stored proxy of this team")
	}
	if err != nil {
		return nil, err
	}
	return &px, nil
}

// assigned emits proxy.assigned for a profile that got px.
func (s *Service) assigned(ctx context.Context, p profile.Profile, px *proxy.Proxy) error {
	if px == nil {
		return nil
	}
	return s.emit(ctx, p, event.ProxyAssigned, map[string]any{"proxy": px.EventView()})
}

func proxyRef(px *proxy.Proxy) *profile.ProxyRef {
	if px == nil {
		return nil
	}
	return &profile.ProxyRef{ID: px.ID, Type: string(px.Type), Host: px.Host, Port: px.Port}
}

// withProxy fills the profile's proxy view when it does not show the
// profile's proxy (the store reads it with the profile; a change of proxy
// leaves the old view); a proxy that cannot be read is shown by its id
// alone.
func (s *Service) withProxy(ctx context.Context, p profile.Profile) profile.Profile {
	if p.ProxyID == "" {
		p.Proxy = nil
		return p
	}
	if p.Proxy != nil && p.Proxy.ID == p.ProxyID {
		return p
	}
	p.Proxy = &profile.ProxyRef{ID: p.ProxyID}
	if s.d.Proxies == nil {
		return p
	}
	if px, err := s.d.Proxies.Lookup(ctx, p.TeamID, p.ProxyID); err == nil {
		p.Proxy = proxyRef(&px)
	}
	return p
}

// Get returns a profile of the actor's team.
func (s *Service) Get(ctx context.Context, actor team.Actor, id string) (profile.Profile, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return profile.Profile{}, err
	}
	if s.d.Cache != nil {
		return s.cachedGet(ctx, actor.TeamID, id)
	}
	return s.d.Profiles.ByID(ctx, actor.TeamID, id)
}

// ListInput selects a page of profiles.
type ListInput struct {
	Query  string
	Status string
	Tag    string
	Cursor string
	Limit  int
}

// List returns a page of the team's profiles, newest first. The cursor is
// the id of the last profile of the previous page, so profiles created while
// a client pages (which sort before it) neither shift nor repeat the rest.
func (s *Service) List(ctx context.Context, actor team.Actor, in ListInput) (paging.Page[profile.Profile], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[profile.Profile]{}, err
	}
	f := profilestore.Filter{Query: in.Query, Tag: in.Tag, BeforeID: in.Cursor, Limit: in.Limit + 1}
	if in.Status != "" {
		st, ok := profile.ParseStatus(in.Status)
		if !ok {
			return paging.Page[profile.Profile]{}, domain.BadRequest("status must be idle or running")
		}
		f.Status = st
	}
	if err := paging.CheckCursor(in.Cursor, "prf_"); err != nil {
		return paging.Page[profile.Profile]{}, err
	}
	if len(in.Query) > profile.MaxNameRunes*4 || len(in.Tag) > profile.MaxTagRunes*4 {
		return paging.Page[profile.Profile]{}, domain.BadRequest("q and tag are too long")
	}
	items, err := s.d.Profiles.List(ctx, actor.TeamID, f)
	if err != nil {
		return paging.Page[profile.Profile]{}, err
	}
	return paging.Cut(items, in.Limit, func(p profile.Profile) string { return p.ID }), nil
}

// Update applies a partial update. ifMatch, when set, must equal the stored
// version (else 412). Without it, a concurrent writer that wins the race is
// not overwritten: the patch is applied again on top of its result.
func (s *Service) Update(ctx context.Context, actor team.Actor, id string, patch profile.Patch, ifMatch *int) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	inline, err := s.prepareInline(ctx, actor, patch.InlineProxy)
	if err != nil {
		return profile.Profile{}, err
	}
	if inline != nil {
		patch.ProxyID = &inline.ID
	}
	var out profile.Profile
	for range s.d.Policy.UpdateAttempts {
		err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
			cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
			if err != nil {
				return err
			}
			if ifMatch != nil && *ifMatch != cur.Version {
				return versionMismatch(cur.Version)
			}
			if patch.Empty() {
				out = s.withProxy(ctx, cur)
				return nil
			}
			next, err := cur.Apply(patch, s.device, s.d.Clock.Now())
			if err != nil {
				return err
			}
			var px *proxy.Proxy
			if next.ProxyID != cur.ProxyID {
				if px, err = s.assignable(ctx, actor.TeamID, next.ProxyID, inline); err != nil {
					return err
				}
			}
			s.uncache(ctx, next.TeamID, next.ID)
			if err := s.d.Profiles.Update(ctx, next, cur.Version); err != nil {
				return err
			}
			out = next
			if px != nil {
				out.Proxy = proxyRef(px)
			}
			out = s.withProxy(ctx, out)
			if err := s.emit(ctx, next, event.ProfileUpdated, nil); err != nil {
				return err
			}
			return s.assigned(ctx, next, px)
		})
		if ifMatch != nil || !domain.IsKind(err, domain.KindPreconditionFailed) {
			break
		}
	}
	if err != nil {
		if ifMatch == nil && domain.IsKind(err, domain.KindPreconditionFailed) {
			return profile.Profile{}, domain.Conflict("the profile kept changing while this update was applied; try again")
		}
		return profile.Profile{}, err
	}
	return out, nil
}

func versionMismatch(current int) error {
	return domain.PreconditionFailed(fmt.Sprintf("If-Match does not match the profile's version %d; read it again and retry", current))
}

// Delete removes an idle profile; a running one is a conflict.
func (s *Service) Delete(ctx context.Context, actor team.Actor, id string) error {
	if err := actor.Require(team.ActDelete); err != nil {
		return err
	}
	return s.d.Tx.Do(ctx, func(ctx context.Context) error {
		p, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
		if err != nil {
			return err
		}
		if err := p.CheckDeletable(); err != nil {
			return s.running(ctx, p)
		}
		s.uncache(ctx, actor.TeamID, id)
		if err := s.d.Profiles.Delete(ctx, actor.TeamID, id); err != nil {
			return err
		}
		// The snapshots go with the profile, and every blob they or the
		// profile referred to may now be unreferenced.
		removed, err := s.d.Snapshots.DeleteAll(ctx, actor.TeamID, id)
		if err != nil {
			return err
		}
		blobs := p.Blobs()
		for _, sn := range removed {
			blobs = append(blobs, sn.Blobs()...)
		}
		if err := s.d.BlobRefs.Release(ctx, s.d.Clock.Now(), blobs...); err != nil {
			return err
		}
		return s.emit(ctx, p, event.ProfileDeleted, nil)
	})
}

// running is the conflict of a profile that holds a session, naming who
// holds it and until when.
func (s *Service) running(ctx context.Context, p profile.Profile) error {
	holder := p.Session.LaunchedBy
	if u, err := s.d.Users.ByID(ctx, p.Session.LaunchedBy); err == nil {
		holder = u.Email + " (" + u.ID + ")"
	}
	until := p.Session.ExpiresAt.UTC().Format(time.RFC3339)
	return &domain.Error{
		Kind:    domain.KindConflict,
		Message: fmt.Sprintf("profile is running: session %s launched by %s, lease until %s", p.Session.ID, holder, until),
		Fields:  []domain.FieldIssue{{Field: "session", Issue: fmt.Sprintf("held by %s in session %s until %s", holder, p.Session.ID, until)}},
	}
}

// emit appends an event about p to the outbox, in ctx's unit. extra adds fields next
// to data.profile.
func (s *Service) emit(ctx context.Context, p profile.Profile, typ event.Type, extra map[string]any) error {
	e, err := s.newEvent(p, typ, extra)
	if err != nil {
		return err
	}
	return s.d.Outbox.Append(ctx, e)
}

// newEvent is the event typ of p, with extra beside data.profile.
func (s *Service) newEvent(p profile.Profile, typ event.Type, extra map[string]any) (event.Event, error) {
	data := map[string]any{"profile": eventProfile(p)}
	for k, v := range extra {
		data[k] = v
	}
	return event.New(s.d.IDs.New("evt"), p.TeamID, typ, s.d.Clock.Now(), data)
}

// eventProfileData is SPEC's data.profile, in its snake_case shape.
type eventProfileData struct {
	ID                  string `json:"id"`
	Name                string `json:"name"`
	Browser             string `json:"browser"`
	FingerprintTemplate string `json:"fingerprint_template"`
	CreatedAt           string `json:"created_at"`
}

func eventProfile(p profile.Profile) eventProfileData {
	name := p.TemplateID
	if t, ok := profile.TemplateByID(p.TemplateID); ok {
		name = t.Name
	}
	return eventProfileData{
		ID: p.ID, Name: p.Name, Browser: p.Browser, FingerprintTemplate: name,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}

// eventSessionData describes a session inside profile.launched and
// profile.stopped.
type eventSessionData struct {
	ID         string `json:"id"`
	LaunchedBy string `json:"launched_by"`
	StartedAt  string `json:"started_at"`
	ExpiresAt  string `json:"expires_at"`
}

func eventSession(sess profile.Session) eventSessionData {
	return eventSessionData{
		ID: sess.ID, LaunchedBy: sess.LaunchedBy,
		StartedAt: sess.StartedAt.UTC().Format(time.RFC3339Nano),
		ExpiresAt: sess.ExpiresAt.UTC().Format(time.RFC3339Nano),
	}
}

// uncounted is the SessionMetrics of a service given none.
type uncounted struct{}

func (uncounted) Launched()        {}
func (uncounted) Stopped(string)   {}
func (uncounted) PlacedElsewhere() {}
func (uncounted) FleetFull()       {}
