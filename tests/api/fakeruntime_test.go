package api_test

import (
	"context"
	"errors"
	"io"
	"sync"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// fakeRuntime is a browser runtime whose browsers the test drives: Start
// fails for the profiles it is told to, and a running browser ends by
// itself (closed by its client, or crashed) when the test reports its exit.
// Its browsers leave nothing behind, so the profiles keep their data, and
// take no CDP clients: Connect finds none.
type fakeRuntime struct {
	mu      sync.Mutex
	failing map[string]bool   // profile ids whose Start fails
	running map[string]string // session id -> profile id
	exits   chan ports.BrowserExit
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{failing: map[string]bool{}, running: map[string]string{}, exits: make(chan ports.BrowserExit, 8)}
}

// option puts rt in place of the service's runtime.
func (rt *fakeRuntime) option() fx.Option {
	return fx.Decorate(func() ports.BrowserRuntime { return rt })
}

// failStart makes every Start of the profile fail.
func (rt *fakeRuntime) failStart(profileID string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.failing[profileID] = true
}

// exit reports that the browser of a session ended by itself.
func (rt *fakeRuntime) exit(profileID, sessionID string, reason profile.StopReason) {
	rt.exits <- ports.BrowserExit{ProfileID: profileID, SessionID: sessionID, Reason: reason}
}

func (rt *fakeRuntime) Start(_ context.Context, spec ports.LaunchSpec) (ports.RunningBrowser, error) {
	if spec.Data != nil {
		if _, err := io.Copy(io.Discard, spec.Data); err != nil {
			return ports.RunningBrowser{}, err
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.failing[spec.Profile.ID] {
		return ports.RunningBrowser{}, errors.New("the browser exited before it accepted CDP connections")
	}
	rt.running[spec.SessionID] = spec.Profile.ID
	return ports.RunningBrowser{CDP: true}, nil
}

func (rt *fakeRuntime) Stop(_ context.Context, _, sessionID string) (*ports.BrowserState, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.running, sessionID)
	return nil, nil
}

func (rt *fakeRuntime) Cookies(_ context.Context, sessionID string) ([]browserdata.Cookie, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.running[sessionID]; !ok {
		return nil, domain.NotFound("browser of session " + sessionID)
	}
	return nil, nil
}

func (rt *fakeRuntime) Connect(_ context.Context, sessionID string) (ports.CDPConn, error) {
	return nil, domain.NotFound("browser of session " + sessionID)
}

func (rt *fakeRuntime) Exits() <-chan ports.BrowserExit { return rt.exits }
