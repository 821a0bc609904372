//go:build linux

package chromium

import (
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

// process is one running browser sandbox: the leader of its own process
// group, so that the sandbox and what runs in it are signalled with it.
type process struct {
	cmd    *exec.Cmd
	output *tail
	// exited is closed once the sandbox's main process has ended; status
	// is valid then.
	exited chan struct{}
	status *os.ProcessState
	// inner is the sandbox's first process (the init of its PID
	// namespace) as the host sees it, with its start time; once it has
	// ended, the kernel has ended every process of the sandbox. Zero
	// when unknown.
	inner      int
	innerStart string
}

// startProcess starts cmd with its output going to a bounded tail.
func startProcess(cmd *exec.Cmd) (*process, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = nil
	cmd.Stdout = pw
	cmd.Stderr = pw
	p := &process{cmd: cmd, output: &tail{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	// The browser's children keep the pipe open after the browser ends, so
	// the output is read apart from Wait, which then does not wait for it.
	pw.Close()
	go func() {
		defer pr.Close()
		_, _ = io.Copy(p.output, pr)
	}()
	go func() {
		_ = cmd.Wait()
		p.status = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
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
		groupGone := errors.Is(syscall.Kill(-p.cmd.Process.Pid, 0), syscall.ESRCH) || !groupAlive(p.cmd.Process.Pid)
		if groupGone && !p.innerAlive() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findInner records the sandbox's first process: bwrap's only child.
func (p *process) findInner() {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	children, err := os.ReadFile("/proc/" + pid + "/task/" + pid + "/children")
	if err != nil {
		return
	}
	fields := strings.Fields(string(children))
	if len(fields) != 1 {
		return
	}
	inner, err := strconv.Atoi(fields[0])
	if err != nil {
		return
	}
	if st, ok := procStat(inner); ok {
		p.inner, p.innerStart = inner, st[19]
	}
}

// innerAlive reports whether the sandbox's first process still runs (a
// zombie has ended; a process of another start time is another process).
func (p *process) innerAlive() bool {
	if p.inner == 0 {
		return false
	}
	st, ok := procStat(p.inner)
	return ok && st[19] == p.innerStart && st[0] != "Z" && st[0] != "X"
}

// procStat returns the fields of /proc/<pid>/stat after the command's
// name: state, ppid, pgrp, ... (starttime is [19]).
func procStat(pid int) ([]string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// comm may hold spaces and parentheses: fields follow the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	return fields, len(fields) > 19
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
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procStat(pid)
		if ok && st[2] == strconv.Itoa(pgid) && st[0] != "Z" && st[0] != "X" {
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
