//go:build unix

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/testenv"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// dataBackend is where a process keeps browser data, seen from outside:
// its configuration and what the test can read of its blob store.
type dataBackend struct {
	env []string
	// receiving reports whether an upload that is not a blob yet has
	// reached the store.
	receiving func(t *testing.T) bool
	// checkStore asserts that every blob the store shows is complete and
	// that the parts of unfinished uploads are no blob.
	checkStore func(t *testing.T)
}

// filesBackend is the embedded default: SQLite and blob files, both under
// dataDir.
func filesBackend(dataDir string) dataBackend {
	blobs := filepath.Join(dataDir, "blobs")
	tmp := filepath.Join(blobs, "tmp")
	return dataBackend{
		env: []string{"DATA_DIR=" + dataDir},
		receiving: func(t *testing.T) bool {
			entries, err := os.ReadDir(tmp)
			if errors.Is(err, fs.ErrNotExist) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				info, err := e.Info()
				if err == nil && strings.HasPrefix(e.Name(), "put-") && info.Size() >= 1<<20 {
					return true
				}
			}
			return false
		},
		checkStore: func(t *testing.T) {
			visible := map[string]bool{}
			err := filepath.WalkDir(blobs, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if path == tmp {
					return filepath.SkipDir
				}
				if d.IsDir() {
					return nil
				}
				name := d.Name()
				if got := fileSHA(t, path); got != name {
					t.Errorf("blob %s holds content of sha256 %s: a blob that is not whole is visible", path, got)
				}
				if filepath.Base(filepath.Dir(path)) != name[:min(2, len(name))] {
					t.Errorf("blob %s is outside its shard directory", path)
				}
				visible[name] = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if sum := fileSHA(t, filepath.Join(tmp, e.Name())); visible[sum] {
					t.Errorf("temporary file %s has the content of visible blob %s", e.Name(), sum)
				}
			}
		},
	}
}

// postgresBackend keeps both the database and the blobs in PostgreSQL.
func postgresBackend(t *testing.T, dataDir string) dataBackend {
	dbURL := testenv.PostgresURL(t)
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	query := func(t *testing.T, q string, args ...any) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Chunks no blobs row refers to belong to an upload that is not (or
	// never became) a blob; the stored previous data have chunks too.
	const unfinishedChunks = `SELECT count(*)::text FROM blob_chunks c
		WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.upload_id = c.upload_id)`
	return dataBackend{
		env: []string{"DATA_DIR=" + dataDir, "DATABASE_URL=" + dbURL},
		receiving: func(t *testing.T) bool {
			return query(t, unfinishedChunks)[0] != "0"
		},
		checkStore: func(t *testing.T) {
			if broken := query(t, `SELECT b.sha256 FROM blobs b LEFT JOIN blob_chunks c ON c.upload_id = b.upload_id
				GROUP BY b.sha256, b.size HAVING coalesce(sum(octet_length(c.data)), 0) <> b.size`); len(broken) != 0 {
				t.Errorf("blobs whose chunks do not add up to their size: %v", broken)
			}
		},
	}
}

// TestDataKilledMidUploadKeepsThePreviousData kills the process with
// SIGKILL while a 50 MB archive is half sent and partly stored, starts it
// again on the same data, and finds the previous data as they were: the
// profile points at them, they download byte for byte, no blob in the
// store is incomplete, and a new upload works.
func TestDataKilledMidUploadKeepsThePreviousData(t *testing.T) {
	t.Run("sqlite and files", func(t *testing.T) {
		dir := t.TempDir()
		testKilledMidUpload(t, dir, filesBackend(filepath.Join(dir, "data")))
	})
	t.Run("postgres", func(t *testing.T) {
		dir := t.TempDir()
		testKilledMidUpload(t, dir, postgresBackend(t, filepath.Join(dir, "data")))
	})
}

func testKilledMidUpload(t *testing.T, dir string, backend dataBackend) {
	addr := freeAddr(t)
	base := "http://" + addr
	env := minimalEnv(append([]string{"HTTP_ADDR=" + addr, "LOG_LEVEL=warn"}, backend.env...)...)
	p := startProcess(t, dir, env, addr)

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "data@example.com", "password": "a long enough password", "name": "Data",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, err)
	}
	token := signIn.AccessToken
	var created struct {
		ID string `json:"id"`
	}
	if code, err := post(base, "/api/v1/profiles", token, map[string]any{"name": "Kept", "templateId": "tpl_chrome_win_us", "proxy": nil}, &created); err != nil || code != http.StatusCreated {
		t.Fatalf("create profile: %d %v", code, err)
	}
	id := created.ID

	// The previous data: a small archive, stored and read back.
	previous := testenv.TarGz(t, map[string]string{
		"Default/Preferences": `{"profile":{"name":"previous"}}`,
		"Default/Cookies":     "cookie database of the previous session",
	})
	code, prevETag, answer := putArchive(t, base, token, id, bytes.NewReader(previous), int64(len(previous)))
	if code != http.StatusOK {
		t.Fatalf("upload of the previous data: %d %s", code, answer)
	}
	prevBytes, prevSHA := downloadData(t, base, token, id)
	if prevETag != `"`+prevSHA+`"` {
		t.Fatalf("upload of the previous data answered ETag %s, its download has sha256 %s", prevETag, prevSHA)
	}

	// The doomed upload: one file of random bytes, so that gzip cannot
	// shrink it and the store receives as much as is sent. Half of it goes
	// out, then the body stalls until the request is abandoned.
	big := largeArchive(t, 50<<20)
	body := newStalledBody(big, len(big)/2)
	t.Cleanup(func() { _ = body.Close() })
	uploaded := make(chan error, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPut, base+"/api/v1/profiles/"+id+"/data", body)
		if err != nil {
			uploaded <- err
			return
		}
		req.ContentLength = int64(len(big))
		req.Header.Set("Content-Type", "application/gzip")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = errors.New("the upload was answered " + resp.Status)
		}
		uploaded <- err
	}()
	select {
	case <-body.stalled:
	case err := <-uploaded:
		t.Fatalf("the upload ended before half of it was sent: %v\n%s", err, p.output)
	case <-time.After(60 * time.Second):
		t.Fatalf("half of the upload was not sent within 60 s\n%s", p.output)
	}
	poll.Within(t, 30*time.Second, "the store to show part of the upload", func() bool { return backend.receiving(t) })

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	// The client notices the dead connection only once its body returns
	// from the stalled read.
	_ = body.Close()
	select {
	case err := <-uploaded:
		if err == nil {
			t.Fatal("the upload to a killed process succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the upload to a killed process did not fail within 30 s")
	}
	// The kill struck mid-upload: what was stored of it is still there.
	if !backend.receiving(t) {
		t.Fatal("no part of the killed upload is left in the store")
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	startProcess(t, dir, env, addr)
	var prof struct {
		Data *struct {
			SizeBytes int64  `json:"sizeBytes"`
			SHA256    string `json:"sha256"`
		} `json:"data"`
	}
	if code := getData(t, base+"/api/v1/profiles/"+id, token, &prof); code != http.StatusOK {
		t.Fatalf("profile after restart: %d", code)
	}
	if prof.Data == nil || prof.Data.SHA256 != prevSHA || prof.Data.SizeBytes != int64(len(prevBytes)) {
		t.Fatalf("profile data after restart = %+v, want sha256 %s and %d bytes", prof.Data, prevSHA, len(prevBytes))
	}
	gotBytes, gotSHA := downloadData(t, base, token, id)
	if gotSHA != prevSHA || !bytes.Equal(gotBytes, prevBytes) {
		t.Fatalf("download after restart: %d bytes of sha256 %s, want the previous %d bytes of sha256 %s", len(gotBytes), gotSHA, len(prevBytes), prevSHA)
	}
	backend.checkStore(t)

	// The service takes uploads again.
	next := testenv.TarGz(t, map[string]string{"Default/Preferences": `{"profile":{"name":"after the restart"}}`})
	code, etag, answer := putArchive(t, base, token, id, bytes.NewReader(next), int64(len(next)))
	if code != http.StatusOK {
		t.Fatalf("upload after restart: %d %s", code, answer)
	}
	nextBytes, nextSHA := downloadData(t, base, token, id)
	if etag != `"`+nextSHA+`"` || nextSHA == prevSHA {
		t.Fatalf("upload after restart answered ETag %s; the download has sha256 %s, the previous data %s", etag, nextSHA, prevSHA)
	}
	if files := testenv.Untar(t, nextBytes); files["Default/Preferences"] != `{"profile":{"name":"after the restart"}}` {
		t.Fatalf("download after the new upload holds %v", files)
	}
	backend.checkStore(t)
}

// stalledBody is a request body that sends data up to stallAt, closes
// stalled, and then blocks until it is closed.
type stalledBody struct {
	data     []byte
	off      int
	stallAt  int
	stalled  chan struct{}
	released chan struct{}
	stall    sync.Once
	release  sync.Once
}

func newStalledBody(data []byte, stallAt int) *stalledBody {
	return &stalledBody{data: data, stallAt: stallAt, stalled: make(chan struct{}), released: make(chan struct{})}
}

func (b *stalledBody) Read(p []byte) (int, error) {
	if b.off == b.stallAt {
		b.stall.Do(func() { close(b.stalled) })
		<-b.released
		return 0, errors.New("upload abandoned")
	}
	n := copy(p, b.data[b.off:b.stallAt])
	b.off += n
	return n, nil
}

func (b *stalledBody) Close() error {
	b.release.Do(func() { close(b.released) })
	return nil
}

// putArchive uploads an archive as a profile's browser data and returns
// the status, the ETag and the answer.
func putArchive(t *testing.T, base, token, id string, body io.Reader, size int64) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, base+"/api/v1/profiles/"+id+"/data", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("ETag"), answer
}

// downloadData reads a profile's browser data and checks that the ETag is
// the sha256 of the bytes, which it returns with them.
func downloadData(t *testing.T, base, token, id string) ([]byte, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/profiles/"+id+"/data", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d %s", resp.StatusCode, b)
	}
	sum := sha256.Sum256(b)
	hexSum := hex.EncodeToString(sum[:])
	if etag := resp.Header.Get("ETag"); etag != `"`+hexSum+`"` {
		t.Fatalf("download ETag %s, but the bytes have sha256 %s", etag, hexSum)
	}
	return b, hexSum
}

// largeArchive packs one file of size random bytes as a tar.gz.
func largeArchive(t *testing.T, size int) []byte {
	t.Helper()
	content := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{'e', '2', 'e'}).Read(content)
	var buf bytes.Buffer
	buf.Grow(size + 1<<20)
	// Random bytes do not compress: storing them as they are costs no time.
	zw, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	writeEntry(t, tw, "Default/Local Storage/leveldb/000003.ldb", content)
	closeArchive(t, tw, zw)
	return buf.Bytes()
}

func writeEntry(t *testing.T, tw *tar.Writer, name string, content []byte) {
	t.Helper()
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
}

func closeArchive(t *testing.T, tw *tar.Writer, zw *gzip.Writer) {
	t.Helper()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
