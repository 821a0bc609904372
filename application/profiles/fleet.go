package profiles

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// Fleet is what the service needs to be one instance of several sharing a
// database: the registry every instance beats into, and the other
// instances, to hand them a launch or the release of a browser they run.
// A service without a registry is alone: it places nothing elsewhere.
type Fleet struct {
	// Instances is the fleet's registry; nil for an instance alone.
	Instances profilestore.Instances
	// Peers are the other instances.
	Peers ports.Peers
	// InstanceID names this process in the registry ("ins_...").
	InstanceID string
	// Version is the service's build, as the registry shows it.
	Version string
	// Timeout is how long an instance may go without a beat before the
	// fleet takes it for gone and ends its sessions.
	Timeout time.Duration
}

// fleetState is this instance's part in the fleet.
type fleetState struct {
	startedAt time.Time
	// beaten is set by the first beat: a row missing later means the
	// fleet took this instance for gone.
	beaten atomic.Bool
}

// errNoBrowsers is a launch placed on an instance whose runtime runs no
// browser (leases only): it cannot take one.
var errNoBrowsers = domain.Unavailable("this instance runs no browsers")

// errFleetFull is a launch that no instance of the fleet has room for.
var errFleetFull = domain.Unavailable("the fleet is full: every instance runs as many browsers as it may (BROWSERS_MAX) or is draining; retry later")

// Beat records this instance in the fleet's registry: its capacity, the
// browsers it runs, whether it drains. An instance that the fleet took for
// gone meanwhile (another instance ended its sessions as crashed) closes
// the browsers it still runs, keeping what they wrote where their sessions
// have not ended yet.
func (s *Service) Beat(ctx context.Context) error {
	f := s.d.Fleet
	node := s.d.Policy.NodeURL()
	if f.Instances == nil || node == "" {
		return nil
	}
	prev, err := f.Instances.Beat(ctx, profilestore.Instance{
		Node: node, ID: f.InstanceID,
		Capacity: s.d.Policy.BrowsersMax, Running: s.BrowsersRunning(), Draining: s.b.draining.Load(),
		Version: f.Version, Engine: s.d.EngineVersion,
		StartedAt: s.fl.startedAt, SeenAt: s.d.Clock.Now(),
	})
	if err != nil {
		return fmt.Errorf("beat in the fleet's registry: %w", err)
	}
	if !s.fl.beaten.Swap(true) {
		return nil
	}
	if prev != nil && prev.ID != f.InstanceID {
		s.d.Log.ErrorContext(ctx, "another process beats for this instance's NODE_URL: each instance needs an address of its own",
			"node", node, "other_instance", prev.ID)
	}
	if prev == nil || prev.GoneAt != nil {
		s.d.Log.WarnContext(ctx, "the fleet took this instance for gone; closing the browsers of its sessions", "node", node)
		return s.stopLocal(ctx, profile.StopCrashed)
	}
	return s.closeOrphans(ctx)
}

// closeOrphans closes the browsers this instance runs whose sessions have
// ended by another path than this instance (an instance that took a
// lease that had run out, say), so that none runs without a lease.
func (s *Service) closeOrphans(ctx context.Context) error {
	var errs []error
	for sessionID, lb := range s.localBrowsers() {
		p, err := s.d.Profiles.ByID(ctx, lb.teamID, lb.profileID)
		if err != nil && !domain.IsKind(err, domain.KindNotFound) {
			errs = append(errs, err)
			continue
		}
		if err == nil && p.Session != nil && p.Session.ID == sessionID {
			continue
		}
		s.d.Log.WarnContext(ctx, "closing a browser whose session has ended elsewhere", "profile_id", lb.profileID, "session_id", sessionID)
		s.stopBrowser(ctx, lb.profileID, sessionID)
	}
	return errors.Join(errs...)
}

// EndGoneInstances takes for gone every instance that has not beaten for
// longer than the fleet waits, and ends its sessions as crashed with the
// data their profiles have (the last cookie checkpoint), so that they can
// be launched again at once elsewhere. Every instance runs it: the
// registry lets one take each instance for gone, and the lease lets one
// end each session. It returns how many sessions this call ended.
func (s *Service) EndGoneInstances(ctx context.Context) (int, error) {
	f := s.d.Fleet
	if f.Instances == nil {
		return 0, nil
	}
	all, err := f.Instances.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the fleet's registry: %w", err)
	}
	now := s.d.Clock.Now()
	seenBy := now.Add(-f.Timeout)
	own := s.d.Policy.NodeURL()
	ended := 0
	var errs []error
	for _, inst := range all {
		if inst.Node == own {
			continue
		}
		if inst.GoneAt == nil {
			if inst.SeenAt.After(seenBy) {
				continue
			}
			ok, err := f.Instances.MarkGone(ctx, inst.Node, seenBy, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("take instance %s for gone: %w", inst.ID, err))
				continue
			}
			if !ok {
				// It beat again, or another instance took it for gone
				// first and ends its sessions.
				continue
			}
			s.d.Log.WarnContext(ctx, "an instance stopped beating; ending its sessions as crashed",
				"node", inst.Node, "instance", inst.ID, "seen_at", inst.SeenAt)
		}
		n, err := s.endNodeSessions(ctx, inst.Node, map[string]bool{})
		ended += n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := f.Instances.Remove(ctx, inst.Node, inst.SeenAt); err != nil {
			errs = append(errs, fmt.Errorf("remove instance %s from the registry: %w", inst.ID, err))
		}
	}
	return ended, errors.Join(errs...)
}

// placeElsewhere hands a launch that this instance has no room for (full,
// why) to the live instance with the most room, ties broken at random. An
// instance that turns out full, or cannot be reached, passes it to the
// next; when none takes it, the fleet is full.
func (s *Service) placeElsewhere(ctx context.Context, actor team.Actor, id string, in LaunchInput, full error) (profile.Profile, error) {
	f := s.d.Fleet
	if f.Instances == nil || f.Peers == nil {
		return profile.Profile{}, full
	}
	candidates, err := s.placements(ctx)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "read the fleet's registry to place a launch", "error", err.Error())
		return profile.Profile{}, full
	}
	for _, inst := range candidates {
		placed, err := f.Peers.LaunchOn(ctx, inst.Node, ports.PlacedLaunch{
			Actor: actor, ProfileID: id, Headless: in.Headless, TTLSeconds: in.TTLSeconds,
		})
		if domain.IsKind(err, domain.KindUnavailable) && ctx.Err() == nil {
			s.d.Log.InfoContext(ctx, "an instance did not take a launch; trying the next",
				"profile_id", id, "instance", inst.ID, "error", err.Error())
			continue
		}
		if err != nil {
			return profile.Profile{}, err
		}
		s.d.Metrics.PlacedElsewhere()
		return s.placedProfile(ctx, actor.TeamID, id, placed)
	}
	s.d.Metrics.FleetFull()
	return profile.Profile{}, errFleetFull
}

// placements are the live instances but this one that run browsers and
// take more, the one with the most room first, ties in a random order so that launches
// spread evenly. One that recorded itself full is asked too, last: its
// record is as old as its last beat, and it may have room since; it
// refuses at once if not.
func (s *Service) placements(ctx context.Context) ([]profilestore.Instance, error) {
	all, err := s.d.Fleet.Instances.List(ctx)
	if err != nil {
		return nil, err
	}
	seenBy := s.d.Clock.Now().Add(-s.d.Fleet.Timeout)
	own := s.d.Policy.NodeURL()
	var out []profilestore.Instance
	for _, inst := range all {
		if inst.Node != own && live(inst, seenBy) && !inst.Draining && inst.Capacity > 0 {
			out = append(out, inst)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	slices.SortStableFunc(out, func(a, b profilestore.Instance) int { return room(b) - room(a) })
	return out, nil
}

func live(inst profilestore.Instance, seenBy time.Time) bool {
	return inst.GoneAt == nil && inst.SeenAt.After(seenBy)
}

func room(inst profilestore.Instance) int {
	return max(inst.Capacity-inst.Running, 0)
}

// placedProfile is the profile as a launch placed on another instance
// answers it: as that instance stored it, with its token.
func (s *Service) placedProfile(ctx context.Context, teamID, id string, placed ports.PlacedSession) (profile.Profile, error) {
	p, err := s.d.Profiles.ByID(ctx, teamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	if p.Session == nil || p.Session.ID != placed.SessionID {
		return profile.Profile{}, errReleasedWhileStarting
	}
	p.Session = withToken(*p.Session, placed.Token)
	return p, nil
}

// LaunchPlaced runs a launch that another instance placed here: the lease
// and the browser are this instance's. An instance without room, or
// draining, refuses it with a domain Unavailable error, and the placing
// instance tries another.
func (s *Service) LaunchPlaced(ctx context.Context, l ports.PlacedLaunch) (ports.PlacedSession, error) {
	if err := l.Actor.Require(team.ActWrite); err != nil {
		return ports.PlacedSession{}, err
	}
	ttl, err := s.ttl(l.TTLSeconds)
	if err != nil {
		return ports.PlacedSession{}, err
	}
	if s.b.slots == nil {
		return ports.PlacedSession{}, errNoBrowsers
	}
	slot, err := s.reserveBrowser()
	if err != nil {
		return ports.PlacedSession{}, err
	}
	p, token, err := s.launchHere(ctx, l.Actor, l.ProfileID, l.Headless, ttl, slot)
	if err != nil {
		return ports.PlacedSession{}, err
	}
	return ports.PlacedSession{SessionID: p.Session.ID, Token: token}, nil
}

// Drain stops this instance taking browsers (its launches go to the other
// instances) and tells the fleet at once; lets the sessions it runs go on
// until they end or until ctx ends (DRAIN_TIMEOUT); then ends the rest as
// a shutdown does, their data stored. It returns once no browser runs
// here.
func (s *Service) Drain(ctx context.Context) error {
	s.b.draining.Store(true)
	if err := s.Beat(context.WithoutCancel(ctx)); err != nil {
		s.d.Log.ErrorContext(ctx, "tell the fleet that this instance drains", "error", err.Error())
	}
	s.waitNoBrowsers(ctx)
	return s.stopLocal(context.WithoutCancel(ctx), profile.StopShutdown)
}

// Draining reports whether this instance drains.
func (s *Service) Draining() bool { return s.b.draining.Load() }

// FleetView is the fleet as an owner or admin of any team sees it: the
// instances and their numbers, nothing of any team's sessions.
type FleetView struct {
	Instances []FleetInstance
	// Capacity and Running add up the live instances; Free is the room
	// of those that take browsers.
	Capacity, Running, Free int
}

// FleetInstance is one live instance of the fleet.
type FleetInstance struct {
	ID                string
	Capacity, Running int
	Draining          bool
	Version, Engine   string
	StartedAt, SeenAt time.Time
}

// Fleet shows the live instances of the fleet, by id, to an owner or admin.
func (s *Service) Fleet(ctx context.Context, actor team.Actor) (FleetView, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return FleetView{}, err
	}
	var view FleetView
	if s.d.Fleet.Instances == nil {
		return view, nil
	}
	all, err := s.d.Fleet.Instances.List(ctx)
	if err != nil {
		return FleetView{}, err
	}
	seenBy := s.d.Clock.Now().Add(-s.d.Fleet.Timeout)
	for _, inst := range all {
		if !live(inst, seenBy) {
			continue
		}
		view.Instances = append(view.Instances, FleetInstance{
			ID: inst.ID, Capacity: inst.Capacity, Running: inst.Running, Draining: inst.Draining,
			Version: inst.Version, Engine: inst.Engine, StartedAt: inst.StartedAt, SeenAt: inst.SeenAt,
		})
		view.Capacity += inst.Capacity
		view.Running += inst.Running
		if !inst.Draining {
			view.Free += room(inst)
		}
	}
	slices.SortFunc(view.Instances, func(a, b FleetInstance) int { return a.StartedAt.Compare(b.StartedAt) })
	return view, nil
}

// Leave takes this instance out of the fleet's registry, at a stop, once
// it runs no browser: the others place nothing more here.
func (s *Service) Leave(ctx context.Context) error {
	f := s.d.Fleet
	node := s.d.Policy.NodeURL()
	if f.Instances == nil || node == "" {
		return nil
	}
	now := s.d.Clock.Now()
	if _, err := f.Instances.MarkGone(ctx, node, now, now); err != nil {
		return err
	}
	_, err := f.Instances.Remove(ctx, node, now)
	return err
}

// releaseElsewhere hands the release of a session whose browser another
// instance runs to that instance, which closes the browser and stores its
// data, and returns the profile as it is afterwards.
func (s *Service) releaseElsewhere(ctx context.Context, actor team.Actor, cur profile.Profile, sess profile.Session) (profile.Profile, error) {
	err := s.d.Fleet.Peers.ReleaseOn(ctx, sess.Node, ports.PlacedRelease{Actor: actor, ProfileID: cur.ID, SessionID: sess.ID})
	if err != nil {
		return profile.Profile{}, err
	}
	p, err := s.d.Profiles.ByID(ctx, cur.TeamID, cur.ID)
	if err != nil {
		return profile.Profile{}, err
	}
	return s.withProxy(ctx, p), nil
}

// ReleasePlaced runs on this instance a release that another instance
// received, of a session whose browser this instance runs.
func (s *Service) ReleasePlaced(ctx context.Context, r ports.PlacedRelease) error {
	if err := r.Actor.Require(team.ActWrite); err != nil {
		return err
	}
	cur, err := s.d.Profiles.ByID(ctx, r.Actor.TeamID, r.ProfileID)
	if err != nil {
		return err
	}
	if cur.Session == nil || cur.Session.ID != r.SessionID {
		return profile.ErrNotRunning
	}
	if err := mayHandle(r.Actor, *cur.Session); err != nil {
		return err
	}
	_, err = s.endSession(ctx, cur.TeamID, cur.ID, *cur.Session, profile.StopReleased)
	if errors.Is(err, errSessionGone) {
		return profile.ErrNotRunning
	}
	return err
}

// runsElsewhere reports whether the browser of sess runs on another
// instance of the fleet, which alone can close it and store its data.
func (s *Service) runsElsewhere(sess profile.Session) bool {
	return s.d.Fleet.Peers != nil && sess.Node != "" && sess.Node != s.d.Policy.NodeURL() && !s.runsHere(sess.ID)
}

// liveNodes are the instances of the fleet but this one that beat, by
// NODE_URL; nil for an instance alone.
func (s *Service) liveNodes(ctx context.Context) (map[string]bool, error) {
	if s.d.Fleet.Instances == nil {
		return nil, nil
	}
	all, err := s.d.Fleet.Instances.List(ctx)
	if err != nil {
		return nil, err
	}
	seenBy := s.d.Clock.Now().Add(-s.d.Fleet.Timeout)
	out := map[string]bool{}
	for _, inst := range all {
		if inst.Node != s.d.Policy.NodeURL() && live(inst, seenBy) {
			out[inst.Node] = true
		}
	}
	return out, nil
}
