package bunstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// statements records the statements a store sends, each one round trip.
type statements struct {
	mu  sync.Mutex
	got []string
}

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (s *statements) AfterQuery(_ context.Context, e *bun.QueryEvent) { s.add(e.Query) }

// TraceQueryStart sees what pgx sends: each query one round trip.
func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.add(d.SQL)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TracePrepareStart sees the round trip that prepares a statement pgx
// has not cached yet.
func (s *statements) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	s.add("PREPARE " + d.SQL)
	return ctx
}

func (s *statements) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (s *statements) add(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, q)
}

// take returns the statements since the last take.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

func wantStatements(t *testing.T, what string, got []string, want int) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("%s sent %d statements, want %d:\n%s", what, len(got), want, strings.Join(got, "\n"))
	}
}

// benchDevice is the device of the profiles these tests read and write:
// one with the fonts of Windows and Office, as many have.
var benchDevice = func() profile.Fingerprint {
	tpl, _ := profile.TemplateByID("tpl_chrome_win_de")
	return tpl.Device("")
}()

func benchProfile(teamID string, i int) profile.Profile {
	return profile.Profile{
		ID: fmt.Sprintf("prf_%04d", i), TeamID: teamID, Name: fmt.Sprintf("P%d", i), TemplateID: "tpl_chrome_win_us",
		Browser: profile.BrowserChromium, Fingerprint: benchDevice, Tags: []string{"b", "a"}, Version: 1,
		CreatedBy: "usr_1", CreatedAt: at, UpdatedAt: at,
	}
}

// countedStores are a fresh SQLite store whose statements bun counts and,
// with TEST_DATABASE_URL, a PostgreSQL store whose round trips pgx counts
// (prepares included).
func countedStores(t *testing.T, fn func(t *testing.T, s *bunstore.Store, stmts *statements)) {
	t.Run("sqlite", func(t *testing.T) {
		var stmts statements
		fn(t, bunstore.WithQueryHook(openStore(t, testenv.SQLiteURL(t)), &stmts), &stmts)
	})
	t.Run("postgres", func(t *testing.T) {
		var stmts statements
		s, err := bunstore.OpenTraced(context.Background(), testenv.StoreOptions(t, testenv.PostgresURL(t)), &stmts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		fn(t, s, &stmts)
	})
}

// A profile read is one round trip, tags and proxy view included, and a
// page of 50 is one.
func TestProfileRoundTrips(t *testing.T) {
	t.Parallel()
	countedStores(t, func(t *testing.T, s *bunstore.Store, stmts *statements) {
		ctx := context.Background()
		px := proxy.Proxy{ID: "prx_1", TeamID: "tm_1", Name: "p", Type: proxy.TypeHTTP, Host: "127.0.0.1", Port: 3128,
			PasswordSealed: []byte{1}, Status: proxy.StatusUnknown, CreatedAt: at, UpdatedAt: at}
		if err := s.Proxies().Create(ctx, px); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			p := benchProfile("tm_1", i)
			p.ProxyID = px.ID
			if _, err := s.Profiles().Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Profiles().ByID(ctx, "tm_1", "prf_0001"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Profiles().List(ctx, "tm_1", profilestore.Filter{Limit: 50}); err != nil {
			t.Fatal(err)
		}
		stmts.take()

		p, err := s.Profiles().ByID(ctx, "tm_1", "prf_0007")
		if err != nil {
			t.Fatal(err)
		}
		wantStatements(t, "ByID", stmts.take(), 1)
		want := profile.ProxyRef{ID: px.ID, Type: string(px.Type), Host: px.Host, Port: px.Port}
		if len(p.Tags) != 2 || p.Tags[0] != "b" || p.Proxy == nil || *p.Proxy != want {
			t.Fatalf("ByID read tags %q and proxy %+v, want [b a] and %+v", p.Tags, p.Proxy, want)
		}

		page, err := s.Profiles().List(ctx, "tm_1", profilestore.Filter{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		wantStatements(t, "List of 50", stmts.take(), 1)
		if len(page) != 50 || page[49].Proxy == nil || len(page[49].Tags) != 2 || page[49].Tags[1] != "a" {
			t.Fatalf("List read %d profiles, the last %+v", len(page), page[len(page)-1])
		}

	})
}
