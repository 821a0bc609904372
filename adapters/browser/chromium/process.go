package chromium

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// outputTail bounds what is kept of a browser's own output: enough to say
// why a launch failed, and no more however long the browser runs.
const outputTail = 32 << 10

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - outputTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// process is one running Chromium: the leader of its own process group,
// so that its renderers, GPU process and zygote are signalled with it.
type process struct {
	cmd    *exec.Cmd
	output *tail
	// devtools receives the DevTools address the browser prints.
	devtools chan string
	// exited is closed once the browser's main process has ended; status
	// is valid then.
	exited chan struct{}
	status *os.ProcessState
}

// launch starts the browser with args and env. Its output goes to a
// bounded tail; the first "DevTools listening on" line is sent on
// devtools.
func launch(path string, args, env []string) (*process, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout = pw
	cmd.Stderr = pw
	// Pdeathsig: if the service dies, so do its browsers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &process{cmd: cmd, output: &tail{}, devtools: make(chan string, 1), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	// The browser's children keep the pipe open after the browser ends, so
	// the output is read apart from Wait, which then does not wait for it.
	pw.Close()
	go p.readOutput(pr)
	go func() {
		_ = cmd.Wait()
		p.status = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

func (p *process) readOutput(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	found := false
	for sc.Scan() {
		line := sc.Text()
		_, _ = p.output.Write([]byte(line + "\n"))
		if !found {
			if _, addr, ok := strings.Cut(line, "DevTools listening on "); ok {
				found = true
				p.devtools <- strings.TrimSpace(addr)
			}
		}
	}
	// A line longer than the scanner's buffer ends the scan; the rest is
	// drained so that the browser never blocks on a full pipe.
	_, _ = io.Copy(p.output, r)
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the browser's whole process group.
func (p *process) signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Signal(sig)
	}
}

// end waits up to grace for the browser to exit, then asks with SIGTERM,
// then kills it, and finally kills whatever of its group is left (a
// renderer that outlived the browser), waiting briefly for the group to
// be gone.
func (p *process) end(grace time.Duration) {
	if !p.wait(grace) {
		p.signal(syscall.SIGTERM)
		if !p.wait(termGrace) {
			p.signal(syscall.SIGKILL)
			<-p.exited
		}
	}
	p.signal(syscall.SIGKILL)
	deadline := time.Now().Add(termGrace)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-p.cmd.Process.Pid, 0); errors.Is(err, syscall.ESRCH) || !groupAlive(p.cmd.Process.Pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether a process of group pgid still runs. A zombie
// does not: it has ended and only waits for its parent (for the browser's
// orphaned helpers, the system's init) to collect it, which some inits do
// only after a second or more.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields are read after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		if fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// kill ends the browser and its group at once.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	<-p.exited
	p.end(0)
}

func (p *process) wait(d time.Duration) bool {
	if d <= 0 {
		return !p.running()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
