package bunstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// BenchmarkProfileList50 reads a page of 50 profiles through List on
// PostgreSQL, half of them running and with data, so that the read decodes
// both NULL and set optional columns.
func BenchmarkProfileList50(b *testing.B) {
	s, err := bunstore.Open(context.Background(), testenv.StoreOptions(b, testenv.PostgresURL(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		p := benchProfile("tm_1", i)
		if i%2 == 0 {
			p.Session = &profile.Session{ID: "ses_" + p.ID, StartedAt: at, ExpiresAt: at.Add(time.Hour), LaunchedBy: "usr_1",
				Headless: true, CDPURL: "ws://127.0.0.1:9222/devtools", CDPTokenHash: "h", Node: "node-1"}
			p.Data = &profile.Data{Content: profile.Content{SHA256: "d", Size: 1 << 20}, UpdatedAt: at}
			p.Cookies = &profile.Content{SHA256: "c", Size: 4096}
		}
		if err := s.Profiles().Create(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page, err := s.Profiles().List(ctx, "tm_1", profilestore.Filter{Limit: 50})
		if err != nil || len(page) != 50 {
			b.Fatalf("List read %d profiles: %v", len(page), err)
		}
	}
}
