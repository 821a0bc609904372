//go:build linux

package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.BrowserLeftovers = (*Runtime)(nil)

// sessionMetaName is the file beside profile/ in a session's directory
// that names the session's profile. It is written before the browser
// starts, so that a process killed at any point after leaves a directory
// its next start can give back to the profile. It is outside profile/:
// the browser never sees it, and it is never packed.
const sessionMetaName = "session.json"

type sessionMeta struct {
	SessionID string `json:"sessionId"`
	ProfileID string `json:"profileId"`
}

// writeSessionMeta records the session's profile in its directory.
func writeSessionMeta(dir, sessionID, profileID string) error {
	raw, err := json.Marshal(sessionMeta{SessionID: sessionID, ProfileID: profileID})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, sessionMetaName), raw, 0o600)
}

// clearWorkDir removes, of what a previous process left in workDir,
// everything but the session directories that name their profile and hold
// a profile directory: the browsers died with that process, and what
// cannot be given back to a profile is of no use. The rest waits for
// Leftovers and Discard.
func clearWorkDir(workDir string) error {
	entries, err := os.ReadDir(workDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		dir := filepath.Join(workDir, e.Name())
		if _, ok := readSessionMeta(dir, e); ok {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("clearing the work directory: %w", err)
		}
	}
	return nil
}

// readSessionMeta reads the metadata of a session directory, which must
// name the directory's session and a profile, beside a profile directory.
func readSessionMeta(dir string, e fs.DirEntry) (sessionMeta, bool) {
	if !e.IsDir() {
		return sessionMeta{}, false
	}
	raw, err := os.ReadFile(filepath.Join(dir, sessionMetaName))
	if err != nil {
		return sessionMeta{}, false
	}
	var meta sessionMeta
	if json.Unmarshal(raw, &meta) != nil || meta.SessionID != e.Name() || meta.ProfileID == "" {
		return sessionMeta{}, false
	}
	if info, err := os.Lstat(filepath.Join(dir, "profile")); err != nil || !info.IsDir() {
		return sessionMeta{}, false
	}
	return meta, true
}

// Leftovers returns, by session id, the sessions whose directories a
// previous process left, each with its profile directory packed. It is for
// the start of the service, before any Start: a session this runtime has
// started is never reported, but the directory of one it has just stopped
// may be until its archive is closed.
func (r *Runtime) Leftovers(ctx context.Context) ([]ports.LeftBrowser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(r.opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("chromium: reading the work directory: %w", err)
	}
	var out []ports.LeftBrowser
	for _, e := range entries {
		dir := filepath.Join(r.opts.WorkDir, e.Name())
		meta, ok := readSessionMeta(dir, e)
		if !ok || r.owns(meta.SessionID) {
			continue
		}
		out = append(out, ports.LeftBrowser{
			ProfileID: meta.ProfileID, SessionID: meta.SessionID,
			// The directory stays until Discard: its data are not stored yet.
			Archive: packDir(filepath.Join(dir, "profile"), func() error { return nil }),
		})
	}
	return out, nil
}

// owns reports whether this runtime is starting or running the session.
func (r *Runtime) owns(sessionID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[sessionID] != nil || r.starting[sessionID]
}

// Discard removes the directory a previous process left for a session.
func (r *Runtime) Discard(sessionID string) error {
	if !validSessionID(sessionID) {
		return fmt.Errorf("chromium: session id %q cannot name a directory", sessionID)
	}
	if r.owns(sessionID) {
		return fmt.Errorf("chromium: session %s runs here; Stop ends it", sessionID)
	}
	if err := os.RemoveAll(filepath.Join(r.opts.WorkDir, sessionID)); err != nil {
		return fmt.Errorf("chromium: removing what session %s left: %w", sessionID, err)
	}
	return nil
}

// validSessionID reports whether id names a directory of its own.
func validSessionID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\\\x00")
}
