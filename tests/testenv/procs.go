package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ProcessesUsing lists the processes whose command line names dir, or
// that see a directory under dir mounted in their file system: a browser
// in its sandbox sees its profile at /profile, and only its mount table
// tells where that is on the host.
func ProcessesUsing(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if Mentions(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Mentions reports whether process pid names dir in its command line or
// its mount table.
func Mentions(pid int, dir string) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	for _, f := range []string{"cmdline", "mountinfo"} {
		b, err := os.ReadFile(filepath.Join(proc, f))
		if err == nil && bytes.Contains(b, []byte(dir)) {
			return true
		}
	}
	return false
}

// CommandLine is the command line of pid, its arguments joined by spaces.
func CommandLine(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '}))
}

// Descendants lists the processes below pid (its children, theirs, and so
// on), found by their parents in /proc; a process that ends while /proc
// is read is left out.
func Descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(stat[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(fields[1])); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	for next := slices.Clone(children[pid]); len(next) > 0; next = next[1:] {
		out = append(out, next[0])
		next = append(next, children[next[0]]...)
	}
	return out
}
