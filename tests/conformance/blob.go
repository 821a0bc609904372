package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

// NewBlobStore returns an empty blob store for one subtest.
type NewBlobStore func(t *testing.T) ports.BlobStore

// RunBlobStore runs the behaviour every ports.BlobStore must share.
func RunBlobStore(t *testing.T, newStore NewBlobStore) {
	ctx := context.Background()
	const limit = 8 << 20

	t.Run("round trips empty, small and multi-chunk content", func(t *testing.T) {
		s := newStore(t)
		for _, size := range []int{0, 1, 1000, 5<<20 + 7} {
			data := randomBytes(t, size)
			info, err := s.Put(ctx, bytes.NewReader(data), limit)
			if err != nil {
				t.Fatalf("Put %d bytes: %v", size, err)
			}
			want := ports.BlobInfo{SHA256: sum(data), Size: int64(size)}
			if info != want {
				t.Fatalf("Put %d bytes = %+v, want %+v", size, info, want)
			}
			if got, err := s.Stat(ctx, want.SHA256); err != nil || got != want {
				t.Fatalf("Stat = %+v, %v; want %+v", got, err, want)
			}
			if got := readBlob(t, s, want); !bytes.Equal(got, data) {
				t.Fatalf("content of %d bytes differs (read %d bytes)", size, len(got))
			}
		}
	})

	t.Run("known hash of known content", func(t *testing.T) {
		s := newStore(t)
		info, err := s.Put(ctx, strings.NewReader("abc"), limit)
		if err != nil {
			t.Fatal(err)
		}
		const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
		if info.SHA256 != want || info.Size != 3 {
			t.Fatalf("Put abc = %+v, want %s/3", info, want)
		}
	})

	t.Run("same content twice is stored once", func(t *testing.T) {
		s := newStore(t)
		data := randomBytes(t, 3<<20)
		first, err := s.Put(ctx, bytes.NewReader(data), limit)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.Put(ctx, bytes.NewReader(data), limit)
		if err != nil || second != first {
			t.Fatalf("second Put = %+v, %v; want %+v", second, err, first)
		}
		if err := s.Delete(ctx, first.SHA256); err != nil {
			t.Fatal(err)
		}
		// One Delete removes it: there was only one copy.
		if _, err := s.Stat(ctx, first.SHA256); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat after Delete = %v, want NotFound", err)
		}
	})

	t.Run("content at the limit is stored, over it is refused and leaves nothing", func(t *testing.T) {
		s := newStore(t)
		at := randomBytes(t, 1000)
		if _, err := s.Put(ctx, bytes.NewReader(at), 1000); err != nil {
			t.Fatalf("Put at the limit: %v", err)
		}
		over := randomBytes(t, 2<<20+1)
		_, err := s.Put(ctx, bytes.NewReader(over), 2<<20)
		if !errors.Is(err, ports.ErrBlobTooLarge) {
			t.Fatalf("Put over the limit = %v, want ErrBlobTooLarge", err)
		}
		if _, err := s.Stat(ctx, sum(over)); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat after refused Put = %v, want NotFound", err)
		}
	})

	t.Run("extreme limits", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Put(ctx, strings.NewReader("unbounded"), math.MaxInt64); err != nil {
			t.Fatalf("Put with the largest limit: %v", err)
		}
		if _, err := s.Put(ctx, strings.NewReader(""), 0); err != nil {
			t.Fatalf("Put of nothing with a zero limit: %v", err)
		}
		for _, max := range []int64{0, -1, -5} {
			if _, err := s.Put(ctx, strings.NewReader("x"), max); !errors.Is(err, ports.ErrBlobTooLarge) {
				t.Fatalf("Put with limit %d = %v, want ErrBlobTooLarge", max, err)
			}
		}
	})

	t.Run("a reader failing midway leaves nothing", func(t *testing.T) {
		s := newStore(t)
		data := randomBytes(t, 3<<20)
		boom := errors.New("connection reset")
		r := io.MultiReader(bytes.NewReader(data[:2<<20]), &failingReader{err: boom})
		if _, err := s.Put(ctx, r, limit); !errors.Is(err, boom) {
			t.Fatalf("Put = %v, want %v", err, boom)
		}
		if _, err := s.Stat(ctx, sum(data[:2<<20])); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat of the partial content = %v, want NotFound", err)
		}
	})

	t.Run("a cancelled context stops Put", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		data := randomBytes(t, 1000)
		if _, err := s.Put(cctx, bytes.NewReader(data), limit); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = %v, want context.Canceled", err)
		}
		if _, err := s.Stat(ctx, sum(data)); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat = %v, want NotFound", err)
		}
	})

	t.Run("missing blob is NotFound; Delete of a missing blob is fine", func(t *testing.T) {
		s := newStore(t)
		missing := sum([]byte("never stored"))
		if _, _, err := s.Open(ctx, missing); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Open = %v, want NotFound", err)
		}
		if _, err := s.Stat(ctx, missing); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat = %v, want NotFound", err)
		}
		if err := s.Delete(ctx, missing); err != nil {
			t.Fatalf("Delete = %v, want nil", err)
		}
	})

	t.Run("Delete then Open is NotFound", func(t *testing.T) {
		s := newStore(t)
		info, err := s.Put(ctx, strings.NewReader("to be deleted"), limit)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, info.SHA256); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Open(ctx, info.SHA256); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Open after Delete = %v, want NotFound", err)
		}
		// The content can be stored again.
		if _, err := s.Put(ctx, strings.NewReader("to be deleted"), limit); err != nil {
			t.Fatal(err)
		}
		if got := readBlob(t, s, info); string(got) != "to be deleted" {
			t.Fatalf("content = %q", got)
		}
	})

	t.Run("concurrent Puts of the same content all succeed", func(t *testing.T) {
		s := newStore(t)
		data := randomBytes(t, 2<<20+3)
		want := ports.BlobInfo{SHA256: sum(data), Size: int64(len(data))}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				info, err := s.Put(ctx, bytes.NewReader(data), limit)
				if err == nil && info != want {
					err = errors.New("Put returned " + info.SHA256)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent Put: %v", err)
			}
		}
		if got := readBlob(t, s, want); !bytes.Equal(got, data) {
			t.Fatal("content differs after concurrent Puts")
		}
		if err := s.Delete(ctx, want.SHA256); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, want.SHA256); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Stat after one Delete = %v, want NotFound", err)
		}
	})

	t.Run("malformed hashes are refused", func(t *testing.T) {
		s := newStore(t)
		good := sum([]byte("x"))
		for _, bad := range []string{"", "abc", strings.ToUpper(good), good + "0", "../" + good[3:], good[:63] + "g"} {
			if _, err := s.Stat(ctx, bad); !domain.IsKind(err, domain.KindBadRequest) {
				t.Errorf("Stat(%q) = %v, want BadRequest", bad, err)
			}
			if _, _, err := s.Open(ctx, bad); !domain.IsKind(err, domain.KindBadRequest) {
				t.Errorf("Open(%q) = %v, want BadRequest", bad, err)
			}
			if err := s.Delete(ctx, bad); !domain.IsKind(err, domain.KindBadRequest) {
				t.Errorf("Delete(%q) = %v, want BadRequest", bad, err)
			}
		}
	})

	t.Run("Put streams: 64 MiB grow the heap by far less", func(t *testing.T) {
		s := newStore(t)
		const size = 64 << 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		info, err := s.Put(ctx, io.LimitReader(&patternReader{}, size), size)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if info.Size != size {
			t.Fatalf("size = %d, want %d", info.Size, size)
		}
		// HeapInuse at the end misses a transient peak; Sys, what the
		// process took from the system, does not.
		if grown := int64(after.HeapSys) - int64(before.HeapSys); grown > 16<<20 {
			t.Fatalf("heap grew by %d MiB for a 64 MiB Put", grown>>20)
		}
		h := sha256.New()
		r, _, err := s.Open(ctx, info.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n, err := io.Copy(h, r)
		if err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != info.SHA256 {
			t.Fatalf("read back %d bytes, %v", n, err)
		}
	})
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func readBlob(t *testing.T, s ports.BlobStore, want ports.BlobInfo) []byte {
	t.Helper()
	r, info, err := s.Open(context.Background(), want.SHA256)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if info != want {
		t.Fatalf("Open info = %+v, want %+v", info, want)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return got
}

type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) { return 0, f.err }

// patternReader yields an endless, cheap, non-constant byte stream.
type patternReader struct{ i byte }

func (p *patternReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.i
		p.i = p.i*31 + 7
	}
	return len(b), nil
}
