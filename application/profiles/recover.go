package profiles

import (
	"context"
	"errors"
	"fmt"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// RecoverBrowsers ends, when an instance starts, the sessions that a
// previous process of it left running when it died without a shutdown
// (killed, or its machine lost), so that their profiles can be launched
// again at once rather than when their leases run out:
//
//   - a session whose directory the runtime kept (ports.BrowserLeftovers)
//     ends as crashed with what its browser had written stored as the
//     profile's data, cleaned as any upload; then the directory goes;
//   - any other session of this instance (Session.Node is its NODE_URL)
//     ends as crashed with the data the profile had.
//
// Each ends once, with one profile.stopped: a session that has ended
// already (a recovery that died after storing its data and before
// discarding its directory, or another instance's reaper) has its
// directory discarded and nothing else. A session whose end fails keeps
// its lease and its directory for the next start. It runs before the
// instance serves; a browser of this process is never touched. It returns
// how many sessions it ended.
func (s *Service) RecoverBrowsers(ctx context.Context) (int, error) {
	ended := 0
	var errs []error
	// handled holds the sessions met through their directories, which the
	// sessions of the node must not end a second time without their data.
	handled := map[string]bool{}
	if lo, ok := s.d.Runtime.(ports.BrowserLeftovers); ok {
		left, err := lo.Leftovers(ctx)
		if err != nil {
			return 0, fmt.Errorf("read what the browsers of a previous process left: %w", err)
		}
		for _, l := range left {
			handled[l.SessionID] = true
			ok, err := s.recoverLeftBrowser(ctx, lo, l)
			if err != nil {
				errs = append(errs, fmt.Errorf("session %s of profile %s: %w", l.SessionID, l.ProfileID, err))
			}
			if ok {
				ended++
			}
		}
	}
	n, err := s.endNodeSessions(ctx, s.d.Policy.NodeURL(), handled)
	if err != nil {
		errs = append(errs, err)
	}
	return ended + n, errors.Join(errs...)
}

// recoverLeftBrowser ends the session of a browser a previous process
// left with what its directory holds, and reports whether it ended it.
func (s *Service) recoverLeftBrowser(ctx context.Context, lo ports.BrowserLeftovers, l ports.LeftBrowser) (bool, error) {
	p, err := s.d.Profiles.BySession(ctx, l.SessionID)
	if domain.IsKind(err, domain.KindNotFound) {
		_ = l.Archive.Close()
		return false, lo.Discard(l.SessionID)
	}
	if err == nil && p.ID != l.ProfileID {
		err = fmt.Errorf("the profile holding the session is %s; the directory is left as it is", p.ID)
	}
	if err != nil {
		_ = l.Archive.Close()
		return false, err
	}
	_, saved, err := s.endWith(ctx, p.TeamID, p.ID, *p.Session, profile.StopCrashed, &ports.BrowserState{Archive: l.Archive})
	if errors.Is(err, errSessionGone) {
		return false, lo.Discard(l.SessionID)
	}
	if err != nil {
		return false, err
	}
	if err := lo.Discard(l.SessionID); err != nil {
		return true, err
	}
	if !saved {
		return true, errors.New("the session ended, but what the browser left could not be stored; the profile keeps its previous data")
	}
	return true, nil
}

// endNodeSessions ends as crashed, with the data their profiles have,
// every session of node that is not in handled and whose browser this
// process does not run.
func (s *Service) endNodeSessions(ctx context.Context, node string, handled map[string]bool) (int, error) {
	if node == "" {
		return 0, nil
	}
	ended := 0
	var errs []error
	for {
		batch, err := s.d.Profiles.ListNodeSessions(ctx, node, s.d.Policy.ReapBatch)
		if err != nil {
			return ended, errors.Join(append(errs, fmt.Errorf("list the sessions of node %s: %w", node, err))...)
		}
		progress := false
		for _, p := range batch {
			sess := *p.Session
			if handled[sess.ID] || s.runsHere(sess.ID) {
				continue
			}
			handled[sess.ID], progress = true, true
			_, _, err := s.endWith(ctx, p.TeamID, p.ID, sess, profile.StopCrashed, nil)
			switch {
			case errors.Is(err, errSessionGone):
			case err != nil:
				errs = append(errs, fmt.Errorf("session %s of profile %s: %w", sess.ID, p.ID, err))
			default:
				ended++
			}
		}
		if len(batch) < s.d.Policy.ReapBatch || !progress {
			return ended, errors.Join(errs...)
		}
	}
}
