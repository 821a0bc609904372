//go:build unix

// Package e2e runs the built profilesvc binary as a process: start-up with no
// configuration, the subcommands, configuration errors and graceful shutdown.
// It runs on Unix systems: it stops the service with SIGTERM, runs it as
// another user and ends process groups.
package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "profilesvc-e2e")
	if err != nil {
		panic(err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	binary = filepath.Join(dir, "profilesvc")
	build := exec.Command("go", "build", "-o", binary, "./cmd/profilesvc")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building profilesvc:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// minimalEnv is an environment with no profilesvc configuration at all.
func minimalEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extra...)
}

type process struct {
	cmd    *exec.Cmd
	addr   string
	output *testenv.Output
	done   chan error
}

func startProcess(t *testing.T, dir string, env []string, addr string) *process {
	t.Helper()
	return startProcessAs(t, dir, env, addr, nil)
}

// startProcessAs is startProcess with the service run as cred (nil: the
// test's own user).
func startProcessAs(t *testing.T, dir string, env []string, addr string, cred *syscall.Credential) *process {
	t.Helper()
	p := &process{addr: addr, output: &testenv.Output{}, done: make(chan error, 1)}
	p.cmd = exec.Command(binary)
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	if cred != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	p.waitHealthy(t)
	return p
}

func (p *process) waitHealthy(t *testing.T) {
	t.Helper()
	poll.Check(t, 30*time.Second, "a healthy answer", func() error {
		select {
		case err := <-p.done:
			t.Fatalf("process exited before serving: %v\n%s", err, p.output)
		default:
		}
		resp, err := http.Get("http://" + p.addr + "/healthz")
		if err != nil {
			return fmt.Errorf("%w\n%s", err, p.output)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz answered %s\n%s", resp.Status, p.output)
		}
		return nil
	})
}

func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("process did not exit\n%s", p.output)
		return -1
	}
}

func TestRunsWithNoConfiguration(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	// HTTP_ADDR only picks a free port; everything else is the default: the
	// SQLite database and generated keys under ./data.
	p := startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr), addr)
	body := `{"email":"first@example.com","password":"a long enough password","name":"First"}`
	resp, err := http.Post("http://"+addr+"/api/v1/auth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	for _, f := range []string{"data/profilesvc.db", "data/jwt_secret", "data/secret_key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.output)
	}
	// The keys were kept: a second start on the same DATA_DIR accepts the
	// account and its password.
	p2 := startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr), addr)
	resp, err = http.Post("http://"+addr+"/api/v1/auth/login", "application/json", strings.NewReader(`{"email":"first@example.com","password":"a long enough password"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login after restart: %d", resp.StatusCode)
	}
	_ = p2.cmd.Process.Signal(syscall.SIGTERM)
	p2.wait(t)
}

func TestSIGTERMLetsTheInFlightRequestFinish(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	p := startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr, "DATABASE_URL=memory://"), addr)

	// A slow client: the request's headers and half its body are sent, then
	// the process is told to stop.
	body := `{"email":"slow@example.com","password":"a long enough password","name":"Slow"}`
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/auth/register HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:20])
	// The signal must find the request in its handler, not still in the
	// kernel's accept queue: wait until /metrics counts it in flight (the
	// /metrics request itself is the other one).
	poll.Within(t, 20*time.Second, "the slow request to reach its handler", func() bool { return inFlight(t, addr) >= 2 })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown has begun once the listener refuses new connections.
	poll.Within(t, 20*time.Second, "the listener to close after SIGTERM", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case err := <-p.done:
		t.Fatalf("process exited with a request in flight: %v\n%s", err, p.output)
	default:
	}
	if _, err := io.WriteString(conn, body[20:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the in-flight response: %v\n%s", err, p.output)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request answered %d", resp.StatusCode)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.output)
	}
}

// inFlight reads profilesvc_http_requests_in_flight from the process's /metrics.
func inFlight(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "profilesvc_http_requests_in_flight "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("profilesvc_http_requests_in_flight %q: %v", v, err)
			}
			return int(n)
		}
	}
	t.Fatal("/metrics has no profilesvc_http_requests_in_flight")
	return 0
}

func TestBadConfigurationNamesTheVariable(t *testing.T) {
	for name, env := range map[string]string{
		"SESSION_TTL_MAX":        "SESSION_TTL_MAX=forever",
		"DATABASE_URL":           "DATABASE_URL=mysql://x",
		"LOG_LEVEL":              "LOG_LEVEL=loud",
		"JWT_SECRET":             "JWT_SECRET=short",
		"WEBHOOK_RETRY_SCHEDULE": "WEBHOOK_RETRY_SCHEDULE=0s,soon",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(binary)
			cmd.Dir = t.TempDir()
			cmd.Env = minimalEnv(env, "HTTP_ADDR="+freeAddr(t))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("started with %s: %v\n%s", env, err, out)
			}
			if !strings.Contains(string(out), name) {
				t.Fatalf("message does not name %s: %s", name, out)
			}
		})
	}
}

func TestSubcommands(t *testing.T) {
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "profilesvc ") {
		t.Fatalf("version: %v %s", err, out)
	}
	dir := t.TempDir()
	cmd := exec.Command(binary, "migrate")
	cmd.Dir = dir
	cmd.Env = minimalEnv()
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "applied") {
		t.Fatalf("migrate: %v %s", err, out)
	}
	cmd = exec.Command(binary, "migrate")
	cmd.Dir = dir
	cmd.Env = minimalEnv()
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "applied 0 migration") {
		t.Fatalf("second migrate is not a no-op: %v %s", err, out)
	}
	out, err = exec.Command(binary, "frobnicate").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "usage") {
		t.Fatalf("unknown command: %v %s", err, out)
	}
}
