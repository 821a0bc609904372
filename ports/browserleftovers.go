package ports

import (
	"context"
	"io"
)

// LeftBrowser is the session of a browser that a previous process of this
// instance ran and never stopped (the process was killed), as its
// directory is left: the session, its profile, and what the browser had
// written.
type LeftBrowser struct {
	ProfileID string
	SessionID string
	// Archive streams the directory packed as a tar.gz, as
	// BrowserState.Archive does (the caller cleans it as any upload).
	// Closing it keeps the directory: Discard removes it.
	Archive io.ReadCloser
}

// BrowserLeftovers is what a browser runtime that keeps its sessions'
// directories on disk reports of them after a restart, so that the
// sessions of a killed process end with what their browsers wrote. A
// runtime without directories (lease only) does not implement it.
type BrowserLeftovers interface {
	// Leftovers returns the sessions whose directories a previous process
	// left, each with its archive, which the caller closes.
	Leftovers(ctx context.Context) ([]LeftBrowser, error)
	// Discard removes what is left of a session, once its data are stored
	// or no longer wanted; a session without leftovers is no error.
	Discard(sessionID string) error
}
