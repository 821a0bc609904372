//go:build linux

package chromium

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox is bubblewrap (bwrap): each browser gets new user, mount,
// PID, IPC, UTS, cgroup and network namespaces. Its file system is the
// host's /usr (read-only), the few files of /etc a browser needs, a
// private /tmp and /dev, its own /proc, and its session's profile
// directory; nothing of DATA_DIR, the service's files or other sessions.
// Its network namespace holds only loopback, on which the session's
// forwarder listens: the browser can reach nothing but its proxy. The
// service speaks CDP to it over --remote-debugging-pipe, so no DevTools
// port exists anywhere. Chromium's own sandbox stays on: inside its user
// namespace the browser is an ordinary user without capabilities. The
// sandbox runs as the service's user; a service run as root gives its
// browsers root's files only where the sandbox binds them (its profile,
// read-only /usr), and no capability.

// Paths inside the sandbox.
const (
	sandboxProfileDir = "/profile"
	// sandboxInitPath is the sandbox's first process: this very binary,
	// which opens the forwarder's listener inside the sandbox's network
	// namespace, hands it to the service and becomes the browser.
	sandboxInitPath = "/run/profilesvc/browser-init"
	sandboxHome     = "/tmp"
	// sandboxDownloads is where the relay points every download: the
	// sandbox's private /tmp, gone with it.
	sandboxDownloads = "/tmp/downloads"
	// sandboxUID and sandboxGID are the browser's ids inside its user
	// namespace: not root, so Chromium keeps its own sandbox.
	sandboxUID = 1000
	sandboxGID = 1000
	// sandboxTmpSize bounds the private /tmp (downloads, Chromium's
	// temporary files); it is memory.
	sandboxTmpSize = 512 << 20
)

// Inherited file descriptors of bwrap and the sandbox's first process:
// CDP in (3) and out (4) as --remote-debugging-pipe wants them, the
// socket the listener is handed back on (5), and the two that bwrap binds
// from (6, 7). The browser keeps only 3 and 4.
const (
	fdCDPIn    = 3
	fdCDPOut   = 4
	fdHandback = 5
	fdSelf     = 6
	fdDir      = 7
	// fdPolicy is the first of the policy files, one per policyDirs; the
	// device's font configuration follows them.
	fdPolicy = 8
	fdFonts  = fdPolicy + 2
)

// sandboxFontsConf is where a browser finds its device's font
// configuration (FONTCONFIG_FILE).
const sandboxFontsConf = "/run/profilesvc/fonts.conf"

// hostEtc are the files of /etc a browser reads; the rest of /etc (users,
// host names, the service's configuration) stays out.
var hostEtc = []string{"/etc/fonts", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/ssl/certs"}

// policies are Chromium's managed policies, bound where Chromium (and
// Google Chrome) read them: no sign-in, sync, updates or Google services
// of its own, no extensions, no file: or browser-internal URL, no file
// chooser, downloads into the sandbox's own folder only; and no warning
// about its flags (--disable-blink-features is one Chromium warns of) in
// a bar above the first tab, which would make that tab's page shorter
// than every other's.
var policies = map[string]any{
	"URLBlocklist": []string{"file://*", "chrome://*", "chrome-untrusted://*", "devtools://*", "view-source:*",
		"chrome-extension://*", "chrome-search://*"},
	"BrowserSignin":                           0,
	"SyncDisabled":                            true,
	"ComponentUpdatesEnabled":                 false,
	"ExtensionInstallBlocklist":               []string{"*"},
	"ExtensionAllowedTypes":                   []string{},
	"AllowFileSelectionDialogs":               false,
	"DownloadDirectory":                       sandboxDownloads,
	"PromptForDownloadLocation":               false,
	"MetricsReportingEnabled":                 false,
	"SafeBrowsingProtectionLevel":             0,
	"SearchSuggestEnabled":                    false,
	"TranslateEnabled":                        false,
	"SpellCheckServiceEnabled":                false,
	"NetworkPredictionOptions":                2,
	"BackgroundModeEnabled":                   false,
	"DefaultBrowserSettingEnabled":            false,
	"PromotionalTabsEnabled":                  false,
	"UrlKeyedAnonymizedDataCollectionEnabled": false,
	"FeedbackSurveysEnabled":                  false,
	"CloudPrintProxyEnabled":                  false,
	"ShoppingListEnabled":                     false,
	"CommandLineFlagSecurityWarningsEnabled":  false,
}

// policyDirs are where Chromium builds read managed policies.
var policyDirs = []string{"/etc/chromium/policies/managed", "/etc/opt/chrome/policies/managed"}

// sandboxEnvKeys are the only variables a browser gets (values set by the
// runtime); the service's own environment, with its secrets, never
// reaches it.
var sandboxEnvKeys = []string{"TZ", "LANG"}

// displayEnv tells the sandbox's first process to start the browser's
// display first: the X server and its screen ("/usr/bin/Xvfb 1920x1080x24").
// The browser itself does not get it.
const displayEnv = "PROFILESVC_DISPLAY"

// Sandbox is how the runtime contains each browser.
type Sandbox struct {
	// Bwrap is the bubblewrap binary.
	Bwrap string
	// Xvfb is the virtual X server a headed browser gets a display of its
	// own from, inside its sandbox; "" finds Xvfb on PATH, and without one
	// a headed launch runs headless.
	Xvfb string
}

// FindBwrap returns the bubblewrap binary: path when set, else bwrap on
// PATH.
func FindBwrap(path string) (string, bool) {
	if path == "" {
		path = "bwrap"
	}
	found, err := exec.LookPath(path)
	return found, err == nil
}

// sandboxed is a browser started in its sandbox, with the two ends the
// service keeps: the CDP pipe and the forwarder's listener in the
// sandbox's network namespace.
type sandboxed struct {
	proc     *process
	cdpIn    *os.File // the service writes the browser's commands here
	cdpOut   *os.File // and reads its answers and events here
	listener net.Listener
}

// sandboxLaunch describes one browser to start.
type sandboxLaunch struct {
	chromium   string   // the browser binary, as configured
	sessionDir string   // host path of the session's profile directory
	args       []string // Chromium's flags, without --proxy-server
	env        map[string]string
	fonts      []byte // the fontconfig document of the device's fonts
	// screen is the size and depth of a headed browser's display, in
	// device pixels ("1920x1080x24"); "" for a headless browser.
	screen string
}

// start runs the browser in its sandbox and waits until it has handed
// back the forwarder's listener. done ends the wait early (a launch
// abandoned or timed out); the process is then killed.
func (sb Sandbox) start(l sandboxLaunch, done <-chan struct{}) (*sandboxed, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the service's own binary: %w", err)
	}
	// bwrap binds these from descriptors the service opened, so that a
	// path changed in the meantime (a link put in place of the session's
	// directory) cannot point it elsewhere.
	selfFD, err := os.OpenFile(self, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer selfFD.Close()
	dirFD, err := os.OpenFile(l.sessionDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer dirFD.Close()

	// Commands go in on one pipe and answers come out on another.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	handback := os.NewFile(uintptr(pair[0]), "handback")
	theirs := os.NewFile(uintptr(pair[1]), "handback-browser")
	// Files given to the child: 3, 4, 5 as the browser expects them, then
	// the two descriptors bwrap binds from.
	dataFDs, err := policyFiles()
	if err == nil {
		var fonts *os.File
		fonts, err = dataFile(l.fonts)
		dataFDs = append(dataFDs, fonts)
	}
	defer closeAll(dataFDs...)
	if err != nil {
		closeAll(inR, inW, outR, outW, handback, theirs)
		return nil, err
	}
	extra := append([]*os.File{inR, outW, theirs, selfFD, dirFD}, dataFDs...)

	args := sb.args(l, fdSelf, fdDir)
	cmd := exec.Command(sb.Bwrap, args...)
	// bwrap itself gets no environment either; --setenv gives the browser
	// its few variables.
	cmd.Env = []string{}
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	proc, err := startProcess(cmd)
	// The child has its copies; the service keeps only its own ends.
	closeAll(inR, outW, theirs)
	if err != nil {
		closeAll(inW, outR, handback)
		return nil, fmt.Errorf("sandbox: start bwrap: %w", err)
	}
	ln, err := receiveListener(handback, proc, done)
	handback.Close()
	// By now the sandbox's first process runs, in its namespaces.
	proc.findInner()
	if err != nil {
		proc.kill()
		closeAll(inW, outR)
		return nil, fmt.Errorf("sandbox: %w (%s)", err, strings.TrimSpace(proc.output.String()))
	}
	return &sandboxed{proc: proc, cdpIn: inW, cdpOut: outR, listener: ln}, nil
}

// args are bwrap's arguments for a launch.
func (sb Sandbox) args(l sandboxLaunch, selfFD, dirFD int) []string {
	a := []string{
		"--unshare-all",
		"--die-with-parent",
		"--new-session",
		"--uid", strconv.Itoa(sandboxUID), "--gid", strconv.Itoa(sandboxGID),
		"--hostname", "localhost",
		"--clearenv",
		"--ro-bind", "/usr", "/usr",
	}
	// /bin, /lib... are links into /usr on a merged system and
	// directories of their own elsewhere.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, p := range hostEtc {
		a = append(a, "--ro-bind-try", p, p)
	}
	for i, dir := range policyDirs {
		a = append(a, "--ro-bind-data", strconv.Itoa(fdPolicy+i), dir+"/profilesvc.json")
	}
	a = append(a, "--ro-bind-data", strconv.Itoa(fdFonts), sandboxFontsConf, "--setenv", "FONTCONFIG_FILE", sandboxFontsConf)
	// A browser installed outside /usr (/opt/google/chrome) brings its
	// own directory.
	if real, err := filepath.EvalSymlinks(l.chromium); err == nil && !strings.HasPrefix(real, "/usr/") {
		dir := filepath.Dir(real)
		a = append(a, "--ro-bind", dir, dir)
	}
	a = append(a,
		// Debian's launcher script sources every file of /etc/chromium.d
		// and fails on an empty directory; its README it skips. Without
		// the rest, it adds no flag of its own that we do not want.
		"--ro-bind-try", "/dev/null", "/etc/chromium.d/README",
		"--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig",
		"--dev", "/dev",
		"--proc", "/proc",
		"--size", strconv.Itoa(sandboxTmpSize), "--tmpfs", "/tmp",
		"--dir", sandboxDownloads,
		"--ro-bind-fd", strconv.Itoa(selfFD), sandboxInitPath,
		"--bind-fd", strconv.Itoa(dirFD), sandboxProfileDir,
		"--setenv", "HOME", sandboxHome,
		"--setenv", "PATH", "/usr/bin:/bin",
	)
	if l.screen != "" && sb.Xvfb != "" {
		// A display of the browser's own, in its own namespaces: its
		// socket in the sandbox's /tmp, its compiled keymaps in a folder
		// of the sandbox. No display of the host is in reach.
		a = append(a, "--dir", "/var/lib/xkb", "--setenv", displayEnv, sb.Xvfb+" "+l.screen)
	}
	for _, k := range sandboxEnvKeys {
		if v, ok := l.env[k]; ok {
			a = append(a, "--setenv", k, v)
		}
	}
	a = append(a, "--", sandboxInitPath, l.chromium)
	return append(a, l.args...)
}

// policyFiles are the read ends of pipes that each hold the policies, for
// bwrap's --ro-bind-data (one per policy directory: bwrap reads each to
// its end).
func policyFiles() ([]*os.File, error) {
	doc, err := json.Marshal(policies)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for range policyDirs {
		f, err := dataFile(doc)
		if err != nil {
			closeAll(files...)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// dataFile is the read end of a pipe that holds doc, for bwrap's
// --ro-bind-data. A pipe holds 64 KiB: the documents, a few kilobytes,
// fit whole.
func dataFile(doc []byte) (*os.File, error) {
	if len(doc) > 64<<10 {
		return nil, fmt.Errorf("sandbox: a document of %d bytes does not fit a pipe", len(doc))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(doc)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// receiveListener reads the forwarder's listener that the sandbox's first
// process sends back, or fails once the process has ended or done is
// closed.
func receiveListener(handback *os.File, proc *process, done <-chan struct{}) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	got := make(chan result, 1)
	go func() {
		ln, err := readListener(handback)
		got <- result{ln, err}
	}()
	select {
	case r := <-got:
		return r.ln, r.err
	case <-proc.exited:
		// Its end of the socket is closed with it: the read ends too.
		r := <-got
		if r.err == nil {
			r.ln.Close()
		}
		return nil, fmt.Errorf("the sandbox ended as it started (%s)", proc.status)
	case <-done:
		proc.kill()
		r := <-got
		if r.err == nil {
			r.ln.Close()
		}
		return nil, errors.New("the launch ended before the sandbox was ready")
	}
}

// readListener receives one descriptor: a listening TCP socket.
func readListener(handback *os.File) (net.Listener, error) {
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(handback.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("the listener was not handed back: %w", err)
	}
	if n == 0 && oobn == 0 {
		return nil, errors.New("the sandbox closed before it handed back the listener")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("the listener was not handed back")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("the listener was not handed back")
	}
	f := os.NewFile(uintptr(fds[0]), "forwarder-listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the handed-back listener: %w", err)
	}
	return ln, nil
}

// runBrowserInit is the sandbox's first process: inside the new network
// namespace it brings up nothing but a listener on loopback for the
// session's forwarder, hands it to the service over the inherited socket,
// then becomes the browser, which gets the listener's address as its
// proxy. It returns only on failure.
func runBrowserInit(args []string) error {
	if len(args) < 1 {
		return errors.New("no browser given")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := unix.Sendmsg(fdHandback, []byte(strconv.Itoa(port)), unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return fmt.Errorf("hand back the listener: %w", err)
	}
	// The service holds the listener now: the browser keeps no copy of it,
	// nor of the socket.
	f.Close()
	ln.Close()
	// The browser inherits the CDP pipe and nothing else. What else is
	// open is closed on exec, not now: bwrap has closed the descriptors it
	// bound from, and the Go runtime may have opened its own under the
	// same numbers since.
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 || fd == fdCDPIn || fd == fdCDPOut {
			continue
		}
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	env := os.Environ()
	if display := os.Getenv(displayEnv); display != "" {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, displayEnv+"=") })
		n, err := startDisplay(display)
		if err != nil {
			return fmt.Errorf("the browser's display: %w", err)
		}
		env = append(env, "DISPLAY=:"+n)
	}
	argv := append(slices.Clip(args), "--proxy-server=http://127.0.0.1:"+strconv.Itoa(port))
	return unix.Exec(args[0], argv, env)
}

// displayTimeout bounds the start of a browser's X server.
const displayTimeout = 10 * time.Second

// startDisplay starts the X server of spec ("<Xvfb> <screen>") and returns
// its display number once it accepts clients. The server outlives this
// process's exec into the browser, and ends with the sandbox.
func startDisplay(spec string) (string, error) {
	xvfb, screen, ok := strings.Cut(spec, " ")
	if !ok {
		return "", fmt.Errorf("%s is not <Xvfb> <screen>", spec)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	// -displayfd: the server picks a free display and writes its number
	// once it is ready.
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", screen, "-nolisten", "tcp", "-noreset", "-dpi", "96")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		return "", err
	}
	if err := r.SetReadDeadline(time.Now().Add(displayTimeout)); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	n := strings.TrimSpace(line)
	if _, convErr := strconv.Atoi(n); err != nil || convErr != nil {
		return "", fmt.Errorf("%s did not say its display within %s: %v", xvfb, displayTimeout, err)
	}
	return n, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// The sandbox's first process is this binary run again at
// sandboxInitPath; it becomes the browser before the service's own start would run.
func init() {
	if len(os.Args) > 0 && os.Args[0] == sandboxInitPath {
		err := runBrowserInit(os.Args[1:])
		fmt.Fprintln(os.Stderr, "profilesvc browser sandbox:", err)
		os.Exit(1)
	}
}
