package profiles

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// browsers are the sessions whose browser this instance runs, and the
// slots that bound them (Policy.BrowsersMax).
type browsers struct {
	mu    sync.Mutex
	local map[string]localBrowser // by session id
	slots chan struct{}           // nil: no bound (no browsers are run)
	// stopped is closed, and replaced, whenever a browser stops: a drain
	// waits on it for the last one.
	stopped chan struct{}
	// draining refuses new browsers (Drain).
	draining atomic.Bool
	// stopping orders the calls that stop every browser (a drain, a
	// shutdown), so that no browser is stopped by two at once.
	stopping sync.Mutex
}

type localBrowser struct {
	teamID, profileID string
	slot              slot
}

// slot is one of the instance's browser places; free gives it back, once.
type slot struct{ release func() }

func (s slot) free() {
	if s.release != nil {
		s.release()
	}
}

// reserveBrowser takes a browser place of this instance, or answers 503
// when every place is taken or the instance drains.
func (s *Service) reserveBrowser() (slot, error) {
	if s.b.slots == nil {
		return slot{}, nil
	}
	if s.b.draining.Load() {
		return slot{}, errDraining
	}
	select {
	case s.b.slots <- struct{}{}:
		return slot{release: sync.OnceFunc(func() { <-s.b.slots })}, nil
	default:
		return slot{}, domain.Unavailable(fmt.Sprintf("this instance runs as many browsers as it may (%d, BROWSERS_MAX); retry later", cap(s.b.slots)))
	}
}

func (s *Service) track(teamID, profileID, sessionID string, sl slot) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.local[sessionID] = localBrowser{teamID: teamID, profileID: profileID, slot: sl}
}

// untrack forgets a session whose browser is stopped and frees its place.
func (s *Service) untrack(sessionID string) {
	s.b.mu.Lock()
	lb, ok := s.b.local[sessionID]
	delete(s.b.local, sessionID)
	if ok {
		close(s.b.stopped)
		s.b.stopped = make(chan struct{})
	}
	s.b.mu.Unlock()
	if ok {
		lb.slot.free()
	}
}

// errDraining is a launch an instance refuses while it drains.
var errDraining = domain.Unavailable("this instance is draining and starts no more browsers; retry later")

// waitNoBrowsers returns once this instance runs no browser, or when ctx
// ends.
func (s *Service) waitNoBrowsers(ctx context.Context) {
	for {
		s.b.mu.Lock()
		n, stopped := len(s.b.local), s.b.stopped
		s.b.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-stopped:
		}
	}
}

func (s *Service) runsHere(sessionID string) bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	_, ok := s.b.local[sessionID]
	return ok
}

func (s *Service) localBrowsers() map[string]localBrowser {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	out := make(map[string]localBrowser, len(s.b.local))
	for id, lb := range s.b.local {
		out[id] = lb
	}
	return out
}

// newCDPToken is a session's relay secret: 32 random bytes, URL-safe.
func newCDPToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cdp token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// cdpURL is the relay address of a session, without its token:
// ws(s)://<PUBLIC_URL>/api/v1/sessions/<id>/cdp.
func (s *Service) cdpURL(sessionID string) string {
	base := strings.TrimSuffix(s.d.Policy.PublicURL(), "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + "/api/v1/sessions/" + sessionID + "/cdp"
}

// launchSpec gathers what the browser of a launch starts from: the
// fingerprint with "auto" resolved from the proxy's last check, the proxy
// with its credentials, the stored data and cookies. cleanup closes the
// data's reader.
func (s *Service) launchSpec(ctx context.Context, p profile.Profile, sessionID string, headless bool) (ports.LaunchSpec, func(), error) {
	spec := ports.LaunchSpec{Profile: p, SessionID: sessionID, Headless: headless}
	cleanup := func() {}
	var tz, country string
	if p.ProxyID != "" && s.d.Proxies != nil {
		px, target, err := s.d.Proxies.Target(ctx, p.TeamID, p.ProxyID)
		if err != nil {
			return ports.LaunchSpec{}, cleanup, fmt.Errorf("proxy of profile %s: %w", p.ID, err)
		}
		spec.Proxy = &target
		if px.LastCheck != nil {
			tz, country = px.LastCheck.Timezone, px.LastCheck.Country
		}
	}
	spec.Profile.Fingerprint = p.Fingerprint.Resolve(tz, country)
	if p.Cookies != nil {
		cs, err := s.d.Data.ReadCookies(ctx, *p.Cookies)
		if err != nil {
			return ports.LaunchSpec{}, cleanup, err
		}
		spec.Cookies = cs
	}
	if p.Data != nil {
		body, _, err := s.d.Blobs.Open(ctx, p.Data.SHA256)
		if err != nil {
			return ports.LaunchSpec{}, cleanup, fmt.Errorf("open browser data of %s: %w", p.ID, err)
		}
		spec.Data = body
		cleanup = func() { _ = body.Close() }
	}
	return spec, cleanup, nil
}

// errSessionGone is a session that ended (by another path) while this one
// was ending it.
var errSessionGone = errors.New("the session has ended already")

// endSession is the one way a session whose browser may run here ends:
// close the browser, store what it left (data and cookies) as the
// profile's, then end the lease and emit profile.stopped with reason. It
// returns the profile as it is afterwards. A browser that fails to stop
// keeps its lease. If the data cannot be stored, the lease still ends (the
// profile keeps its previous data) and the error says why.
func (s *Service) endSession(ctx context.Context, teamID, profileID string, sess profile.Session, reason profile.StopReason) (profile.Profile, error) {
	ctx = context.WithoutCancel(ctx)
	state, err := s.d.Runtime.Stop(ctx, profileID, sess.ID)
	if err != nil {
		// A browser that did not stop keeps its lease: it may still run.
		return profile.Profile{}, fmt.Errorf("stop browser of profile %s: %w", profileID, err)
	}
	defer s.untrack(sess.ID)
	out, saved, err := s.endWith(ctx, teamID, profileID, sess, reason, state)
	if err != nil {
		return profile.Profile{}, err
	}
	if !saved {
		return out, domain.Unavailable("the session ended, but the browser's data could not be stored; the profile keeps its previous data")
	}
	return out, nil
}

// endWith stores what a stopped browser left (state; nil for nothing) as
// the profile's data, then ends the lease of sess and emits
// profile.stopped with reason, in one unit. saved is false when state
// could not be stored: the lease ends all the same, and the profile keeps
// its previous data. A session that is no longer the profile's is
// errSessionGone, and then nothing changes.
func (s *Service) endWith(ctx context.Context, teamID, profileID string, sess profile.Session, reason profile.StopReason, state *ports.BrowserState) (out profile.Profile, saved bool, err error) {
	var archive, cookies *ports.BlobInfo
	var saveErr error
	if state != nil {
		archive, cookies, saveErr = s.saveState(ctx, state)
		if saveErr != nil {
			s.d.Log.ErrorContext(ctx, "store the data of a stopped browser", "profile_id", profileID, "session_id", sess.ID, "error", saveErr.Error())
		}
	}
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		cur, err := s.d.Profiles.ByID(ctx, teamID, profileID)
		if err != nil {
			return err
		}
		if cur.Session == nil || cur.Session.ID != sess.ID {
			return errSessionGone
		}
		now := s.d.Clock.Now()
		next := cur
		if archive != nil && (cur.Data == nil || cur.Data.SHA256 != archive.SHA256) {
			next.Data = &profile.Data{Content: profile.Content{SHA256: archive.SHA256, Size: archive.Size}, UpdatedAt: now.UTC()}
		}
		if cookies != nil {
			next.Cookies = &profile.Content{SHA256: cookies.SHA256, Size: cookies.Size}
		}
		if !sameContent(cur, next) {
			next.Version, next.UpdatedAt = cur.Version+1, now.UTC()
			s.uncache(ctx, next.TeamID, next.ID)
			if err := s.d.Profiles.Update(ctx, next, cur.Version); err != nil {
				return err
			}
			if err := s.d.BlobRefs.Release(ctx, now, cur.Blobs()...); err != nil {
				return err
			}
		}
		s.uncache(ctx, teamID, profileID)
		ok, err := s.d.Profiles.SwapSession(ctx, teamID, profileID, profilestore.SessionSwap{ExpectSessionID: sess.ID})
		if err != nil {
			return err
		}
		if !ok {
			return errSessionGone
		}
		next.Session = nil
		out = s.withProxy(ctx, next)
		return s.stopped(ctx, cur, sess, reason)
	})
	if err != nil {
		return profile.Profile{}, false, err
	}
	return out, saveErr == nil, nil
}

// saveState stores a stopped browser's directory (cleaned as any upload)
// and cookies, and closes the state.
func (s *Service) saveState(ctx context.Context, state *ports.BrowserState) (archive, cookies *ports.BlobInfo, err error) {
	defer state.Archive.Close()
	err = s.d.Data.Upload(ctx, func(ctx context.Context) error {
		info, err := s.d.Data.PutArchive(ctx, state.Archive)
		if err != nil {
			return err
		}
		archive = &info
		if len(state.Cookies) == 0 {
			return nil
		}
		c, err := s.d.Data.PutCookies(ctx, state.Cookies)
		if err != nil {
			return err
		}
		cookies = &c
		return nil
	})
	return archive, cookies, err
}

// BrowserExited ends the session of a browser that ended by itself, keeping
// what it wrote.
func (s *Service) BrowserExited(ctx context.Context, exit ports.BrowserExit) error {
	s.b.mu.Lock()
	lb, ok := s.b.local[exit.SessionID]
	s.b.mu.Unlock()
	if !ok {
		return nil
	}
	p, err := s.d.Profiles.ByID(ctx, lb.teamID, lb.profileID)
	if err != nil {
		return err
	}
	if p.Session == nil || p.Session.ID != exit.SessionID {
		s.stopBrowser(ctx, lb.profileID, exit.SessionID)
		return nil
	}
	_, err = s.endSession(ctx, lb.teamID, lb.profileID, *p.Session, exit.Reason)
	if errors.Is(err, errSessionGone) {
		return nil
	}
	return err
}

// StopBrowsers ends every session whose browser this instance runs, for a
// shutdown: each browser is closed and its data stored before its lease
// ends.
func (s *Service) StopBrowsers(ctx context.Context) error {
	return s.stopLocal(ctx, profile.StopShutdown)
}

// stopLocal ends, with reason, every session whose browser this instance
// runs, each browser closed and its data stored before its lease ends; a
// browser whose session has ended already is closed.
func (s *Service) stopLocal(ctx context.Context, reason profile.StopReason) error {
	s.b.stopping.Lock()
	defer s.b.stopping.Unlock()
	var wg sync.WaitGroup
	running := s.localBrowsers()
	errs := make(chan error, len(running))
	for sessionID, lb := range running {
		wg.Go(func() {
			p, err := s.d.Profiles.ByID(ctx, lb.teamID, lb.profileID)
			if err != nil || p.Session == nil || p.Session.ID != sessionID {
				s.stopBrowser(ctx, lb.profileID, sessionID)
				errs <- err
				return
			}
			if _, err := s.endSession(ctx, lb.teamID, lb.profileID, *p.Session, reason); err != nil && !errors.Is(err, errSessionGone) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// CheckpointCookies stores the cookies of every browser this instance
// runs, so that losing the instance loses at most the cookies set since.
// The profile's version does not change: its browser owns its data while
// it runs.
func (s *Service) CheckpointCookies(ctx context.Context) error {
	var errs []error
	for sessionID, lb := range s.localBrowsers() {
		if err := s.checkpoint(ctx, sessionID, lb); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", sessionID, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) checkpoint(ctx context.Context, sessionID string, lb localBrowser) error {
	cs, err := s.d.Runtime.Cookies(ctx, sessionID)
	if domain.IsKind(err, domain.KindNotFound) || (err == nil && len(cs) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.d.Data.Upload(ctx, func(ctx context.Context) error {
		info, err := s.d.Data.PutCookies(ctx, cs)
		if err != nil {
			return err
		}
		return s.d.Tx.Do(ctx, func(ctx context.Context) error {
			cur, err := s.d.Profiles.ByID(ctx, lb.teamID, lb.profileID)
			if err != nil {
				return err
			}
			if cur.Session == nil || cur.Session.ID != sessionID || (cur.Cookies != nil && cur.Cookies.SHA256 == info.SHA256) {
				return nil
			}
			next := cur
			next.Cookies = &profile.Content{SHA256: info.SHA256, Size: info.Size}
			s.uncache(ctx, next.TeamID, next.ID)
			if err := s.d.Profiles.Update(ctx, next, cur.Version); err != nil {
				return err
			}
			return s.d.BlobRefs.Release(ctx, s.d.Clock.Now(), cur.Blobs()...)
		})
	})
}

// SessionsRunning is how many sessions of every team, on every instance,
// have not expired: the profiles running on the whole service.
func (s *Service) SessionsRunning(ctx context.Context) (int, error) {
	return s.d.Profiles.CountSessions(ctx, s.d.Clock.Now())
}

// BrowsersRunning is how many browsers this instance runs.
func (s *Service) BrowsersRunning() int {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return len(s.b.local)
}

// BrowsersCapacity is how many browsers this instance may run at once (0
// for a runtime that runs none).
func (s *Service) BrowsersCapacity() int { return s.d.Policy.BrowsersMax }
