package profiles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// LaunchInput is what a client asks of a launch.
type LaunchInput struct {
	Headless bool
	// TTLSeconds is the lease length; nil means the default.
	TTLSeconds *int
}

// ttl turns a requested lease length into a duration within the policy.
func (s *Service) ttl(seconds *int) (time.Duration, error) {
	if seconds == nil {
		return s.d.Policy.SessionTTLDefault, nil
	}
	maxSeconds := int(s.d.Policy.SessionTTLMax / time.Second)
	if *seconds < 1 || *seconds > maxSeconds {
		return 0, domain.Invalid("ttlSeconds", fmt.Sprintf("must be from 1 to %d", maxSeconds))
	}
	return time.Duration(*seconds) * time.Second, nil
}

// Launch takes the profile's exclusive lease and starts its browser: on
// this instance when it has room, else on the instance of the fleet with
// the most (see fleet.go). The lease is a compare-and-set in the database,
// so of any number of launches, through any number of instances, one wins
// and the others get a conflict naming the holder. A lease that has run
// out but not been reaped yet is ended (profile.stopped, reason expired)
// and taken over.
func (s *Service) Launch(ctx context.Context, actor team.Actor, id string, in LaunchInput) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	ttl, err := s.ttl(in.TTLSeconds)
	if err != nil {
		return profile.Profile{}, err
	}
	// A browser place first, here or elsewhere: a launch that no instance
	// can run takes no lease.
	slot, err := s.reserveBrowser()
	if err != nil {
		return s.placeElsewhere(ctx, actor, id, in, err)
	}
	p, _, err := s.launchHere(ctx, actor, id, in.Headless, ttl, slot)
	return p, err
}

// launchHere takes the lease and starts the browser on this instance, in
// the browser place slot, which it keeps for the browser or frees. It
// returns the profile as the launch answers it, with the token in the
// session's cdpURL, and the token alone.
func (s *Service) launchHere(ctx context.Context, actor team.Actor, id string, headless bool, ttl time.Duration, slot slot) (profile.Profile, string, error) {
	launched := false
	defer func() {
		if !launched {
			slot.free()
		}
	}()
	now := s.d.Clock.Now()
	sessionID := s.d.IDs.New("ses")
	var p profile.Profile
	var ended *profile.Session
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
		if err != nil {
			return err
		}
		next, old, err := cur.Launch(sessionID, actor.UserID, headless, ttl, now)
		if errors.Is(err, profile.ErrRunning) {
			return s.running(ctx, cur)
		}
		if err != nil {
			return err
		}
		swap := profilestore.SessionSwap{Next: next.Session}
		if old != nil {
			swap.ExpectSessionID, swap.ExpiredBy = old.ID, &now
		}
		s.uncache(ctx, actor.TeamID, id)
		ok, err := s.d.Profiles.SwapSession(ctx, actor.TeamID, id, swap)
		if err != nil {
			return err
		}
		if !ok {
			return s.lostRace(ctx, actor.TeamID, id)
		}
		if old != nil {
			ended = old
			if err := s.stopped(ctx, cur, *old, profile.StopExpired); err != nil {
				return err
			}
		}
		p = next
		return s.launched(ctx, p)
	})
	if err != nil {
		return profile.Profile{}, "", err
	}
	sess := *p.Session
	if ended != nil {
		s.stopBrowser(ctx, id, ended.ID)
	}
	spec, cleanup, err := s.launchSpec(ctx, p, sess.ID, headless)
	if err != nil {
		s.abortLaunch(ctx, p, sess)
		return profile.Profile{}, "", err
	}
	running, err := s.d.Runtime.Start(ctx, spec)
	cleanup()
	if err != nil {
		s.abortLaunch(ctx, p, sess)
		if domain.IsKind(err, domain.KindUnavailable) {
			return profile.Profile{}, "", err
		}
		return profile.Profile{}, "", fmt.Errorf("start browser of profile %s: %w", id, err)
	}
	if !running.CDP {
		return p, "", nil
	}
	token, err := newCDPToken()
	if err != nil {
		s.stopBrowser(ctx, id, sess.ID)
		s.abortLaunch(ctx, p, sess)
		return profile.Profile{}, "", err
	}
	next := sess
	next.CDPURL = s.cdpURL(sess.ID)
	next.CDPTokenHash = hashToken(token)
	next.Node = s.d.Policy.NodeURL()
	ok, err := s.d.Profiles.SwapSession(ctx, actor.TeamID, id, profilestore.SessionSwap{ExpectSessionID: sess.ID, Next: &next})
	s.uncache(ctx, actor.TeamID, id)
	if err != nil || !ok {
		s.stopBrowser(ctx, id, sess.ID)
		if err != nil {
			return profile.Profile{}, "", err
		}
		return profile.Profile{}, "", errReleasedWhileStarting
	}
	s.track(p.TeamID, id, sess.ID, slot)
	launched = true
	// The token is in this answer only: reads show the address without it.
	p.Session = withToken(next, token)
	return p, token, nil
}

// errReleasedWhileStarting is a launch whose session ended before its
// browser had started.
var errReleasedWhileStarting = domain.Conflict("the session was released while its browser was starting")

// withToken is the session as the launch answers it: the cdpURL with the
// relay token, which reads never show.
func withToken(sess profile.Session, token string) *profile.Session {
	sess.CDPURL += "?token=" + token
	return &sess
}

// lostRace is the conflict of a launch whose compare-and-set found another
// session: it names the session that won.
func (s *Service) lostRace(ctx context.Context, teamID, id string) error {
	cur, err := s.d.Profiles.ByID(ctx, teamID, id)
	if err != nil {
		return err
	}
	if cur.Session == nil {
		return domain.Conflict("profile changed while launching; try again")
	}
	return s.running(ctx, cur)
}

// abortLaunch ends a session whose browser did not start, so the profile is
// not left locked until the lease runs out.
func (s *Service) abortLaunch(ctx context.Context, p profile.Profile, sess profile.Session) {
	ctx = context.WithoutCancel(ctx)
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		s.uncache(ctx, p.TeamID, p.ID)
		ok, err := s.d.Profiles.SwapSession(ctx, p.TeamID, p.ID, profilestore.SessionSwap{ExpectSessionID: sess.ID})
		if err != nil || !ok {
			return err
		}
		return s.stopped(ctx, p, sess, profile.StopFailed)
	})
	if err != nil {
		s.d.Log.ErrorContext(ctx, "end session of a failed launch", "profile_id", p.ID, "session_id", sess.ID, "error", err.Error())
	}
}

func (s *Service) stopBrowser(ctx context.Context, profileID, sessionID string) {
	state, err := s.d.Runtime.Stop(context.WithoutCancel(ctx), profileID, sessionID)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "stop browser", "profile_id", profileID, "session_id", sessionID, "error", err.Error())
	}
	if state != nil {
		_ = state.Archive.Close()
	}
	s.untrack(sessionID)
}

// launched emits profile.launched of p's session in ctx's unit and, once
// the unit has committed, logs the launch and counts it.
func (s *Service) launched(ctx context.Context, p profile.Profile) error {
	sess := *p.Session
	if err := s.emit(ctx, p, event.ProfileLaunched, map[string]any{"session": eventSession(sess)}); err != nil {
		return err
	}
	unit.OnCommit(ctx, func(ctx context.Context) {
		s.d.Metrics.Launched()
		s.d.Log.InfoContext(ctx, "profile launched", "team_id", p.TeamID, "profile_id", p.ID,
			"session_id", sess.ID, "launched_by", sess.LaunchedBy)
	})
	return nil
}

// stopped emits profile.stopped of p's session sess in ctx's unit and, once
// the unit has committed, logs the stop with its reason and counts it.
func (s *Service) stopped(ctx context.Context, p profile.Profile, sess profile.Session, reason profile.StopReason) error {
	data := map[string]any{"reason": string(reason), "session": eventSession(sess)}
	if err := s.emit(ctx, p, event.ProfileStopped, data); err != nil {
		return err
	}
	unit.OnCommit(ctx, func(ctx context.Context) {
		s.d.Metrics.Stopped(string(reason))
		s.d.Log.InfoContext(ctx, "profile stopped", "team_id", p.TeamID, "profile_id", p.ID,
			"session_id", sess.ID, "launched_by", sess.LaunchedBy, "reason", string(reason))
	})
	return nil
}

// mayHandle reports whether the actor may act on a session: its holder, or
// a role that may release other members' sessions.
func mayHandle(actor team.Actor, sess profile.Session) error {
	if sess.LaunchedBy == actor.UserID {
		return nil
	}
	if err := actor.Require(team.ActDelete); err != nil {
		return domain.Forbidden("the session belongs to another member; only an admin or owner may act on it")
	}
	return nil
}

// Heartbeat extends the lease of a live session to now plus the TTL.
func (s *Service) Heartbeat(ctx context.Context, actor team.Actor, id, sessionID string, ttlSeconds *int) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	if sessionID == "" {
		return profile.Profile{}, domain.Invalid("sessionId", "is required")
	}
	ttl, err := s.ttl(ttlSeconds)
	if err != nil {
		return profile.Profile{}, err
	}
	cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	next, err := cur.Heartbeat(sessionID, ttl, s.d.Clock.Now())
	if err != nil {
		return profile.Profile{}, err
	}
	if err := mayHandle(actor, *cur.Session); err != nil {
		return profile.Profile{}, err
	}
	// The swap expects the session read: a release or expiry since then
	// makes it fail rather than revive the session.
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		s.uncache(ctx, actor.TeamID, id)
		ok, err := s.d.Profiles.SwapSession(ctx, actor.TeamID, id, profilestore.SessionSwap{ExpectSessionID: sessionID, Next: next.Session})
		if err == nil && !ok {
			err = profile.ErrSessionEnded
		}
		return err
	})
	if err != nil {
		return profile.Profile{}, err
	}
	return next, nil
}

// Release stops the profile's browser, keeping its data, and ends the
// session. Members release their own sessions; admins and owners anyone's.
func (s *Service) Release(ctx context.Context, actor team.Actor, id string) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	_, sess, err := cur.Release()
	if err != nil {
		return profile.Profile{}, err
	}
	if err := mayHandle(actor, sess); err != nil {
		return profile.Profile{}, err
	}
	if s.runsElsewhere(sess) {
		return s.releaseElsewhere(ctx, actor, cur, sess)
	}
	p, err := s.endSession(ctx, cur.TeamID, id, sess, profile.StopReleased)
	if errors.Is(err, errSessionGone) {
		return profile.Profile{}, profile.ErrNotRunning
	}
	if err != nil {
		return profile.Profile{}, err
	}
	return p, nil
}

// ReapExpired ends every session whose lease ran out, stopping its browser
// and emitting profile.stopped with reason expired. Every instance may run
// it: the compare-and-set lets one instance end each session, and a session
// whose browser another live instance runs is left to that one. It returns
// how many sessions this call ended.
func (s *Service) ReapExpired(ctx context.Context) (int, error) {
	now := s.d.Clock.Now()
	reaped := 0
	seen := map[string]bool{}
	// The sessions of another live instance are its to end: it closes
	// their browsers and stores their data.
	others, err := s.liveNodes(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the fleet's registry: %w", err)
	}
	for {
		batch, err := s.d.Profiles.ListExpiredSessions(ctx, now, s.d.Policy.ReapBatch)
		if err != nil {
			return reaped, err
		}
		progress := false
		var errs []error
		for _, p := range batch {
			if seen[p.Session.ID] {
				continue
			}
			seen[p.Session.ID] = true
			progress = true
			if others[p.Session.Node] && !s.runsHere(p.Session.ID) {
				continue
			}
			ok, err := s.reap(ctx, p, now)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				reaped++
			}
		}
		if len(errs) > 0 {
			return reaped, errors.Join(errs...)
		}
		if len(batch) < s.d.Policy.ReapBatch || !progress {
			return reaped, nil
		}
	}
}

func (s *Service) reap(ctx context.Context, p profile.Profile, now time.Time) (bool, error) {
	sess := *p.Session
	if s.runsHere(sess.ID) {
		// This instance runs the browser: close it and keep what it wrote
		// before the lease ends.
		_, err := s.endSession(ctx, p.TeamID, p.ID, sess, profile.StopExpired)
		if errors.Is(err, errSessionGone) {
			return false, nil
		}
		return err == nil, err
	}
	var ok bool
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		var err error
		s.uncache(ctx, p.TeamID, p.ID)
		ok, err = s.d.Profiles.SwapSession(ctx, p.TeamID, p.ID, profilestore.SessionSwap{ExpectSessionID: sess.ID, ExpiredBy: &now})
		if err != nil || !ok {
			return err
		}
		return s.stopped(ctx, p, sess, profile.StopExpired)
	})
	if domain.IsKind(err, domain.KindNotFound) {
		return false, nil
	}
	if ok {
		// After the lease has ended, not before: a heartbeat that won the
		// race keeps its browser.
		s.stopBrowser(ctx, p.ID, sess.ID)
	}
	return ok, err
}
