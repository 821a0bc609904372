package bench_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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
)

const (
	// archiveFileBytes is the content of the archive a client uploads:
	// 300 MB of incompressible bytes, split over archiveFiles files.
	archiveFileBytes = 300_000_000
	archiveFiles     = 3
	// rssGrowthLimit is how far the service's resident memory may grow
	// while one archive goes through it. Streaming holds a few buffers per
	// request; holding the archive would take hundreds of MB.
	rssGrowthLimit = 64_000_000
	// rssSampleEvery is how often the resident memory is read during a
	// transfer; VmHWM catches what falls between two samples.
	rssSampleEvery = 50 * time.Millisecond
)

// BenchmarkData sends a 300 MB browser-data archive to a profilesvc process
// of its own (the embedded default: SQLite and blob files) and fetches it
// back, and reports how far the process's resident memory grew during each
// transfer (rss-growth-MB, the worst iteration) beside the throughput. The
// archive streams from the request through the sanitizer into the blob
// store and from there to the response, so the growth stays a small,
// fixed amount: 64 MB or more fails the benchmark.
func BenchmarkData(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the service's resident memory is read from /proc, which only Linux has")
	}
	p := startServiceProcess(b)
	var created idOnly
	p.call(b, http.MethodPost, "/api/v1/profiles", map[string]any{"name": "bench data", "templateId": "tpl_chrome_win_us", "proxy": nil}, http.StatusCreated, &created)
	path := "/api/v1/profiles/" + created.Data.ID + "/data"

	var seed uint64
	var stored dataStored
	b.Run("upload", func(b *testing.B) {
		b.SetBytes(archiveFileBytes)
		var worst rssMeasure
		for b.Loop() {
			// Another seed each time: the same archive twice would be
			// stored once and change nothing the second time.
			seed++
			m := p.measureRSS(b, func() { stored = p.uploadArchive(b, path, seed) })
			worst = worst.worse(m)
			b.Logf("upload of %d bytes (stored %d): RSS %.1f MB idle, %.1f MB before, %.1f MB peak, growth %.1f MB",
				archiveFileBytes, stored.SizeBytes, mb(p.idleRSS), mb(m.before), mb(m.peak), mb(m.growth()))
		}
		reportGrowth(b, worst)
	})
	b.Run("download", func(b *testing.B) {
		if stored.SizeBytes == 0 {
			seed++
			stored = p.uploadArchive(b, path, seed)
		}
		b.SetBytes(stored.SizeBytes)
		var worst rssMeasure
		for b.Loop() {
			m := p.measureRSS(b, func() { p.downloadArchive(b, path, stored) })
			worst = worst.worse(m)
			b.Logf("download of %d bytes: RSS %.1f MB idle, %.1f MB before, %.1f MB peak, growth %.1f MB",
				stored.SizeBytes, mb(p.idleRSS), mb(m.before), mb(m.peak), mb(m.growth()))
		}
		reportGrowth(b, worst)
	})
}

// reportGrowth reports the transfer whose resident memory grew the most,
// its growth and its peak, and fails the benchmark when the growth reaches
// the limit.
func reportGrowth(b *testing.B, worst rssMeasure) {
	b.ReportMetric(mb(worst.growth()), "rss-growth-MB")
	b.ReportMetric(mb(worst.peak), "rss-peak-MB")
	if worst.growth() >= rssGrowthLimit {
		b.Fatalf("resident memory grew by %.1f MB during a transfer; the limit is %.0f MB", mb(worst.growth()), mb(rssGrowthLimit))
	}
}

func mb(bytes int64) float64 { return float64(bytes) / 1e6 }

// dataStored is the answer to an upload.
type dataStored struct {
	SizeBytes int64  `json:"sizeBytes"`
	SHA256    string `json:"sha256"`
}

// uploadArchive streams a freshly generated archive to path and returns
// what the service stored.
func (p *serviceProcess) uploadArchive(b *testing.B, path string, seed uint64) dataStored {
	b.Helper()
	body := generatedArchive(seed)
	defer body.Close()
	req, err := http.NewRequest(http.MethodPut, p.base+path, body)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("PUT %s: %d: %s", path, resp.StatusCode, raw)
	}
	var out struct {
		Data dataStored `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatal(err)
	}
	// Incompressible files cannot come out of the sanitizer's gzip smaller
	// than they are.
	if out.Data.SizeBytes < archiveFileBytes {
		b.Fatalf("stored %d bytes of an archive of %d bytes of files", out.Data.SizeBytes, archiveFileBytes)
	}
	return out.Data
}

// downloadArchive reads the archive at path to its end and checks it is the
// one stored.
func (p *serviceProcess) downloadArchive(b *testing.B, path string, want dataStored) {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		b.Fatalf("GET %s: %d: %s", path, resp.StatusCode, raw)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != want.SizeBytes || got != want.SHA256 {
		b.Fatalf("downloaded %d bytes with sha256 %s; stored were %d bytes with sha256 %s", n, got, want.SizeBytes, want.SHA256)
	}
}

// generatedArchive is a tar.gz of archiveFiles files of pseudo-random bytes
// that seed chooses, produced while it is read: the client holds a copy
// buffer, never the archive. The gzip stream stores the bytes as they are,
// since they do not compress.
func generatedArchive(seed uint64) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeArchive(pw, seed)) }()
	return pr
}

func writeArchive(w io.Writer, seed uint64) error {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	src := rand.NewChaCha8(key)
	zw, err := gzip.NewWriterLevel(w, gzip.NoCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	modTime := time.Unix(1_700_000_000, 0)
	for i := range archiveFiles {
		hdr := &tar.Header{
			Name: fmt.Sprintf("Default/IndexedDB/https_app.example_0.indexeddb.blob/1/00/%d", i+1), Typeflag: tar.TypeReg,
			Mode: 0o600, Size: archiveFileBytes / archiveFiles, ModTime: modTime,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, src, hdr.Size); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// serviceProcess is the built profilesvc binary running as a process of
// its own, so that its resident memory is the service's alone, with a
// registered account to call it.
type serviceProcess struct {
	*service
	pid int
	// dataDir is the process's DATA_DIR.
	dataDir string
	// idleRSS is the resident memory once the process serves, before its
	// first request. The registration's password hash leaves about 20 MB
	// of freed heap resident, which a transfer may reuse without growing:
	// a peak compared with idleRSS counts that memory as growth too.
	idleRSS int64
}

// startServiceProcess builds profilesvc and runs it on the embedded default
// in a temporary DATA_DIR, listening on loopback; it stops at the end of b.
// env holds KEY=value entries that add to or replace the defaults (the last
// of two entries for the same key wins).
func startServiceProcess(b *testing.B, env ...string) *serviceProcess {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "profilesvc")
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", bin, "./cmd/profilesvc")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building profilesvc: %v\n%s", err, out)
	}
	addr := freeLoopbackAddr(b)
	logPath := filepath.Join(dir, "profilesvc.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"HTTP_ADDR=" + addr, "DATA_DIR=" + dataDir,
		// One caller; its requests must not wait for a rate limit.
		"RATE_LIMIT=off",
		"LOG_LEVEL=warn", "BROWSER_RUNTIME=none",
	}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
	})
	serviceLog := func() string {
		out, _ := os.ReadFile(logPath)
		return string(out)
	}

	p := &serviceProcess{service: &service{base: "http://" + addr, client: &http.Client{}}, pid: cmd.Process.Pid, dataDir: dataDir}
	poll.Check(b, 60*time.Second, "profilesvc to be healthy", func() error {
		select {
		case <-exited:
			b.Fatalf("profilesvc exited before serving: %v\n%s", waitErr, serviceLog())
		default:
		}
		if !p.healthy() {
			return fmt.Errorf("not yet\n%s", serviceLog())
		}
		return nil
	})
	if p.idleRSS, err = procStatus(p.pid, "VmRSS"); err != nil {
		b.Fatal(err)
	}
	var reg struct {
		Data struct {
			AccessToken string `json:"accessToken"`
		} `json:"data"`
	}
	p.call(b, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "bench@example.com", "password": "benchmark password", "name": "Bench"}, http.StatusCreated, &reg)
	p.token = reg.Data.AccessToken
	return p
}

func (p *serviceProcess) healthy() bool {
	resp, err := p.client.Get(p.base + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// freeLoopbackAddr returns a loopback address nobody listens on.
func freeLoopbackAddr(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// rssMeasure is the process's resident memory before a transfer and the
// most it reached during it.
type rssMeasure struct{ before, peak int64 }

func (m rssMeasure) growth() int64 { return m.peak - m.before }

// worse returns whichever of m and o grew more.
func (m rssMeasure) worse(o rssMeasure) rssMeasure {
	if o.growth() > m.growth() {
		return o
	}
	return m
}

// measureRSS runs transfer while sampling the process's resident memory.
// The kernel's high-water mark (VmHWM) is reset first, when the kernel
// allows it, so that it covers the transfer alone and catches a peak
// between two samples.
func (p *serviceProcess) measureRSS(b *testing.B, transfer func()) rssMeasure {
	b.Helper()
	// Writing 5 to clear_refs resets VmHWM to the current VmRSS.
	hwmReset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
	if hwmReset != nil {
		b.Logf("VmHWM cannot be reset (%v); the peak is sampled every %s only", hwmReset, rssSampleEvery)
	}
	before, err := procStatus(p.pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	sampled := make(chan int64, 1)
	go func() {
		peak := before
		tick := time.NewTicker(rssSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
				if rss, err := procStatus(p.pid, "VmRSS"); err == nil {
					peak = max(peak, rss)
				}
			}
		}
	}()
	func() {
		defer close(stop)
		transfer()
	}()
	m := rssMeasure{before: before, peak: <-sampled}
	if hwmReset == nil {
		hwm, err := procStatus(p.pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		m.peak = max(m.peak, hwm)
	}
	return m
}

// procStatus reads a memory field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	return procMemory(fmt.Sprintf("/proc/%d/status", pid), field)
}

// procMemory reads a field in kB of a /proc file made of "Field: value"
// lines, such as /proc/PID/status or /proc/PID/smaps_rollup, in bytes.
func procMemory(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %s %q: %w", path, field, v, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no %s", path, field)
}
