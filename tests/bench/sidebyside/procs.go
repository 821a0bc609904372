//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

// build compiles pkg into dir and returns the binary's path.
func build(goTool, dir, pkg, name string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return out, nil
}

// buildAt builds pkg as it was at the git revision rev, from that
// revision's tree written out under dir.
func buildAt(goTool, dir, rev, pkg, name string) (string, error) {
	src := filepath.Join(dir, "src-"+name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "archive", "--format=tar", rev)
	tree, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	archive.Stderr = os.Stderr
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin, untar.Stderr = tree, os.Stderr
	if err := archive.Start(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", rev, err)
	}
	untarErr := untar.Run()
	if err := errors.Join(archive.Wait(), untarErr); err != nil {
		return "", fmt.Errorf("the tree of %s: %w", rev, err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = src, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s at %s: %w", pkg, rev, err)
	}
	return out, nil
}

// proc is a server process the bench started.
type proc struct {
	cmd  *exec.Cmd
	addr string
	log  string
	// done is closed once the process has exited and been waited for.
	done chan struct{}
}

func newProc(cmd *exec.Cmd, log string) *proc {
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

// start runs bin with exactly env (nothing inherited, so a variable of the
// caller's shell cannot change what is measured). Its output goes to a log
// file beside it; the process dies with the bench.
func start(bin string, args, env []string, log string) (*proc, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return newProc(cmd, log), nil
}

// stop ends p with SIGTERM, as an orchestrator would, then waits for it.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the end of p's log, for an error message.
func (p *proc) tail() string {
	raw, _ := os.ReadFile(p.log)
	if len(raw) > 500 {
		raw = raw[len(raw)-500:]
	}
	// One line, so it fits in a markdown list item.
	return strings.Join(strings.Fields(string(raw)), " ")
}

// rssMB reads the resident set size of p from /proc.
func (p *proc) rssMB() (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// freeAddr returns a loopback address with a port free now, so a service
// can be restarted on the same address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthy polls GET /healthz on addr until it answers 200 and returns
// how long after t0 that was. The poll interval (1 ms) bounds the error.
func waitHealthy(ctx context.Context, p *proc, addr string, t0 time.Time, limit time.Duration) (time.Duration, error) {
	req := load.Build(addr, load.Request{Method: "GET", Path: "/healthz"})
	deadline := t0.Add(limit)
	c := load.NewConn(addr)
	defer c.Close()
	for {
		if status, _, err := c.Do(req); err == nil && status == 200 {
			return time.Since(t0), nil
		}
		c.Close()
		select {
		case <-p.done:
			return 0, fmt.Errorf("exited before it served: %s", p.tail())
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no 200 from /healthz within %v: %s", limit, p.tail())
		}
		time.Sleep(time.Millisecond)
	}
}

// startLimit starts the limit server in mode, with flags, and reads the
// address it prints.
func startLimit(bin, dir, mode string, flags ...string) (*proc, error) {
	cmd := exec.Command(bin, append([]string{"-mode", mode}, flags...)...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log := filepath.Join(dir, "limit-"+mode+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stderr = f
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := newProc(cmd, log)
	// The line comes after Listen: from then on connections are accepted.
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		p.stop()
		return nil, fmt.Errorf("limit server %s: %q %v: %s", mode, line, err, p.tail())
	}
	p.addr = addr
	return p, nil
}
