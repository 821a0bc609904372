//go:build unix

package e2e

import (
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestOneProcessPerSQLiteFile starts the service on the embedded database,
// then a second process on the same file: it exits non-zero at once with a
// line naming DATABASE_URL, and so does migrate, while the first goes on
// serving. Once the first has stopped, a new one starts on the file.
func TestOneProcessPerSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	env := func(addr string) []string { return minimalEnv("HTTP_ADDR="+addr, "LOG_LEVEL=warn") }
	addr := freeAddr(t)
	first := startProcess(t, dir, env(addr), addr)
	base := "http://" + addr
	held := "DATABASE_URL: another process holds sqlite://data/profilesvc.db (its lock data/profilesvc.db.lock is taken)"

	for _, c := range []struct{ cmd, line string }{
		{"serve", "profilesvc: " + held},
		{"migrate", "profilesvc: migrate: " + held},
	} {
		cmd := exec.Command(binary, c.cmd)
		cmd.Dir = dir
		cmd.Env = env(freeAddr(t))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%s beside a running service: %v, want exit code 1\n%s", c.cmd, err, out)
		}
		// The logs are JSON; what is not is the one line for the operator.
		var plain []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasPrefix(l, "{") {
				plain = append(plain, l)
			}
		}
		if len(plain) != 1 || !strings.HasPrefix(plain[0], c.line) {
			t.Fatalf("%s beside a running service wrote\n%s\nwant one line besides the logs, starting with\n%s", c.cmd, out, c.line)
		}
	}

	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "first@example.com", "password": "a long enough password", "name": "First",
	}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("register on the first process after the refusals: %d %v\n%s", code, err, first.output)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t); code != 0 {
		t.Fatalf("first process exit code %d\n%s", code, first.output)
	}

	next := startProcess(t, dir, env(addr), addr)
	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/login", "", map[string]string{
		"email": "first@example.com", "password": "a long enough password",
	}, &signIn); err != nil || code != http.StatusOK || signIn.AccessToken == "" {
		t.Fatalf("login on the next process: %d %v\n%s", code, err, next.output)
	}
}
