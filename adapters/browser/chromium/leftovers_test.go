//go:build linux

package chromium

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// writeFiles writes each file under dir, making its directories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// readLeftover reads the archive of a leftover and closes it.
func readLeftover(t *testing.T, l ports.LeftBrowser) []byte {
	t.Helper()
	data, err := io.ReadAll(l.Archive)
	if err != nil {
		t.Fatalf("reading the archive of %s: %v", l.SessionID, err)
	}
	if err := l.Archive.Close(); err != nil {
		t.Fatalf("closing the archive of %s: %v", l.SessionID, err)
	}
	return data
}

// entryNames lists a work directory.
func entryNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestNewKeepsTheSessionsAKilledProcessLeftForLeftovers(t *testing.T) {
	t.Parallel()
	// The options of a runtime as the service makes them, on a work
	// directory of the test's own.
	opts := newRuntime(t, 1).opts
	dir := opts.WorkDir
	writeFiles(t, dir, map[string]string{
		// A session directory as launch makes it: kept, with its data.
		"ses_left/session.json":                          `{"sessionId":"ses_left","profileId":"prf_left"}`,
		"ses_left/profile/Default/Preferences":           `{"profile":{"name":"left"}}`,
		"ses_left/profile/Default/Local Storage/marker":  "written before the kill",
		"ses_left/profile/Default/Cache/Cache_Data/data": "cached",
		"ses_left/profile/Local State":                   "state",
		// What names no profile cannot be given back: removed.
		"ses_nometa/profile/Default/Preferences": `{}`,
		"ses_other/session.json":                 `{"sessionId":"ses_else","profileId":"prf_other"}`,
		"ses_other/profile/Default/Preferences":  `{}`,
		"ses_noprof/session.json":                `{"sessionId":"ses_noprof","profileId":"prf_noprof"}`,
		"ses_broken/session.json":                `{"sessionId":`,
		"ses_broken/profile/Default/Preferences": `{}`,
		"ses_noid/session.json":                  `{"sessionId":"ses_noid"}`,
		"ses_noid/profile/Default/Preferences":   `{}`,
		"stray":                                  "a file",
	})
	if err := os.Symlink("host-123", filepath.Join(dir, "ses_left", "profile", "SingletonLock")); err != nil {
		t.Fatal(err)
	}

	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := entryNames(t, dir); len(got) != 1 || got[0] != "ses_left" {
		t.Fatalf("after New the work directory holds %v, want [ses_left]", got)
	}

	// Reading the leftovers keeps them: their data are not stored yet.
	for range 2 {
		left, err := rt.Leftovers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].ProfileID != "prf_left" || left[0].SessionID != "ses_left" {
			t.Fatalf("Leftovers: %+v, want session ses_left of profile prf_left", left)
		}
		names := archiveNames(t, readLeftover(t, left[0]))
		want := []string{"Default/", "Default/Preferences", "Default/Local Storage/", "Default/Local Storage/marker"}
		if len(names) != len(want) {
			t.Errorf("the leftover's archive holds %v, want %v", names, want)
		}
		for _, name := range want {
			if !names[name] {
				t.Errorf("the leftover's archive lacks %s: %v", name, names)
			}
		}
	}

	if err := rt.Discard("ses_left"); err != nil {
		t.Fatal(err)
	}
	if got := entryNames(t, dir); len(got) != 0 {
		t.Errorf("after Discard the work directory holds %v, want nothing", got)
	}
	left, err := rt.Leftovers(context.Background())
	if err != nil || len(left) != 0 {
		t.Errorf("Leftovers after Discard: %+v, %v; want none", left, err)
	}
	if err := rt.Discard("ses_left"); err != nil {
		t.Errorf("a second Discard: %v, want none", err)
	}
	for _, id := range []string{"", "..", "../browsers", "a/b"} {
		if err := rt.Discard(id); err == nil {
			t.Errorf("Discard(%q) answered no error", id)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the work directory: %v", err)
	}
}

// TestABrowserOfAKilledProcessIsALeftover kills a running browser as the
// death of the service does and starts another runtime on the same work
// directory: it reports the session with the data the browser started
// from, and never reports a session it runs itself.
func TestABrowserOfAKilledProcessIsALeftover(t *testing.T) {
	rt := newRuntime(t, 2)
	spec := launchSpec("prf_killed", "ses_killed")
	spec.Data = bytes.NewReader(tarGz(t,
		entry{name: "Default/", typ: tar.TypeDir},
		entry{name: "Default/Local Storage/", typ: tar.TypeDir},
		entry{name: "Default/Local Storage/marker", typ: tar.TypeReg, body: "written before the kill"},
	))
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	if left, err := rt.Leftovers(testContext(t)); err != nil || len(left) != 0 {
		t.Fatalf("Leftovers of a runtime running the session: %+v, %v; want none", left, err)
	}
	if err := rt.Discard(spec.SessionID); err == nil {
		t.Fatal("Discard of a running session answered no error")
	}
	sessionDir := filepath.Join(rt.opts.WorkDir, spec.SessionID)
	if _, err := os.Stat(filepath.Join(sessionDir, "profile", "session.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session.json inside the browser's profile directory: %v", err)
	}

	rt.mu.Lock()
	pid := rt.sessions[spec.SessionID].proc.cmd.Process.Pid
	rt.mu.Unlock()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	expectExit(t, rt, spec, profile.StopCrashed)

	next, err := New(rt.opts)
	if err != nil {
		t.Fatal(err)
	}
	left, err := next.Leftovers(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ProfileID != "prf_killed" || left[0].SessionID != "ses_killed" {
		t.Fatalf("Leftovers after the kill: %+v, want session ses_killed of profile prf_killed", left)
	}
	data := readLeftover(t, left[0])
	again := t.TempDir()
	if err := unpack(again, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(again, "Default", "Local Storage", "marker")); err != nil || string(got) != "written before the kill" {
		t.Errorf("the leftover's Default/Local Storage/marker: %q, %v; want what the browser started with", got, err)
	}
	if err := next.Discard(spec.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sessionDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the session's directory after Discard: %v", err)
	}
}
