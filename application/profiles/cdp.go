package profiles

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// CDPConn is a client's connection to a session's browser, as the
// runtime opens it.
type CDPConn = ports.CDPConn

// CDPTarget is where the relay takes a client of a session's browser:
// Connect, which opens a connection to the browser when this instance runs
// it, or else Node, the address (NODE_URL) of the instance that does.
type CDPTarget struct {
	Connect func(ctx context.Context) (CDPConn, error)
	Node    string
}

// errBadCDPToken answers alike an unknown session, an ended one and a
// wrong token, so the relay reveals nothing about sessions.
var errBadCDPToken = domain.Unauthorized("the session is over or the token is wrong; launch the profile again for a new cdpUrl")

// CDPTarget checks a relay client's token against the live session and
// says where its browser runs.
func (s *Service) CDPTarget(ctx context.Context, sessionID, token string) (CDPTarget, error) {
	if sessionID == "" || token == "" {
		return CDPTarget{}, errBadCDPToken
	}
	p, err := s.d.Profiles.BySession(ctx, sessionID)
	if domain.IsKind(err, domain.KindNotFound) {
		return CDPTarget{}, errBadCDPToken
	}
	if err != nil {
		return CDPTarget{}, err
	}
	sess := p.Session
	if sess == nil || sess.ID != sessionID || sess.Expired(s.d.Clock.Now()) || sess.CDPTokenHash == "" {
		return CDPTarget{}, errBadCDPToken
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(sess.CDPTokenHash)) != 1 {
		return CDPTarget{}, errBadCDPToken
	}
	if s.runsHere(sessionID) {
		return CDPTarget{Connect: func(ctx context.Context) (CDPConn, error) {
			conn, err := s.d.Runtime.Connect(ctx, sessionID)
			if domain.IsKind(err, domain.KindNotFound) {
				return nil, errBadCDPToken
			}
			return conn, err
		}}, nil
	}
	if sess.Node == "" || sess.Node == s.d.Policy.NodeURL() {
		// This instance should run it and does not: the browser is gone
		// and its session about to end.
		return CDPTarget{}, errBadCDPToken
	}
	return CDPTarget{Node: sess.Node}, nil
}

// LiveView is what the console's live view of a running profile may do:
// where its browser is (as for the relay), and whether the actor may send
// input to it (a viewer watches only).
type LiveView struct {
	CDPTarget
	Input bool
}

// errNotLive is the live view of a profile without a browser of this
// service's.
var errNotLive = domain.Conflict("the profile runs no browser of this service to watch; launch it first")

// LiveView opens the live view of a running profile of the actor's team.
// A team's member reads it as they read the profile; input is for those
// who may act on it.
func (s *Service) LiveView(ctx context.Context, actor team.Actor, id string) (LiveView, error) {
	p, err := s.Get(ctx, actor, id)
	if err != nil {
		return LiveView{}, err
	}
	sess := p.Session
	if sess == nil || sess.Expired(s.d.Clock.Now()) || sess.CDPURL == "" {
		return LiveView{}, errNotLive
	}
	view := LiveView{Input: actor.Role.Can(team.ActWrite)}
	sessionID := sess.ID
	switch {
	case s.runsHere(sessionID):
		view.Connect = func(ctx context.Context) (CDPConn, error) {
			conn, err := s.d.Runtime.Connect(ctx, sessionID)
			if domain.IsKind(err, domain.KindNotFound) {
				return nil, errNotLive
			}
			return conn, err
		}
	case sess.Node != "" && sess.Node != s.d.Policy.NodeURL():
		view.Node = sess.Node
	default:
		return LiveView{}, errNotLive
	}
	return view, nil
}
