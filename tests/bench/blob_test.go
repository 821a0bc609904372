package bench_test

import (
	"context"
	"io"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	blobpg "github.com/profilesvc/profilesvc/adapters/blob/postgres"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// BenchmarkBlobPut stores 64 MiB per iteration, each time different
// content, and reports the bytes allocated per MiB stored: a store that
// streams allocates a bounded amount per chunk, never the whole content.
func BenchmarkBlobPut(b *testing.B) {
	const size = 64 << 20
	stores := map[string]func(*testing.B) ports.BlobStore{
		"files": func(b *testing.B) ports.BlobStore {
			s, err := files.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"postgres": func(b *testing.B) ports.BlobStore {
			s, err := bunstore.Open(context.Background(), testenv.StoreOptions(b, testenv.PostgresURL(b)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			if _, err := s.Migrate(context.Background()); err != nil {
				b.Fatal(err)
			}
			return blobpg.New(s.DB(), 0)
		},
	}
	for name, open := range stores {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			b.SetBytes(size)
			b.ReportAllocs()
			seed := byte(0)
			for b.Loop() {
				seed++
				if _, err := s.Put(context.Background(), io.LimitReader(&pattern{i: seed}, size), size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pattern yields an endless, cheap byte stream that its seed varies.
type pattern struct{ i byte }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.i
		p.i = p.i*31 + 7
	}
	return len(b), nil
}
