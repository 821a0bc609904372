package bunstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// statements records the statements a store sends, each one round trip.
type statements struct {
	mu  sync.Mutex
	got []string
}

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (s *statements) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e.Query)
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

func benchProfile(teamID string, i int) profile.Profile {
	return profile.Profile{
		ID: fmt.Sprintf("prf_%04d", i), TeamID: teamID, Name: fmt.Sprintf("P%d", i), TemplateID: "tpl_chrome_win_us",
		Browser: profile.BrowserChromium, Tags: []string{"b", "a"}, Version: 1, CreatedBy: "usr_1", CreatedAt: at, UpdatedAt: at,
	}
}

// A profile read is one statement, tags and proxy view included, and so is
// a page of 50; a create is one statement on PostgreSQL, and its unit two
// with the outbox event.
func TestProfileRoundTrips(t *testing.T) {
	forEachDialect(t, func(t *testing.T, plain *bunstore.Store) {
		ctx := context.Background()
		var stmts statements
		s := bunstore.WithQueryHook(plain, &stmts)
		px := proxy.Proxy{ID: "prx_1", TeamID: "tm_1", Name: "p", Type: proxy.TypeHTTP, Host: "127.0.0.1", Port: 3128,
			PasswordSealed: []byte{1}, Status: proxy.StatusUnknown, CreatedAt: at, UpdatedAt: at}
		if err := s.Proxies().Create(ctx, px); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			p := benchProfile("tm_1", i)
			p.ProxyID = px.ID
			if err := s.Profiles().Create(ctx, p); err != nil {
				t.Fatal(err)
			}
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
		if len(page) != 50 || page[49].Proxy == nil || len(page[49].Tags) != 2 {
			t.Fatalf("List read %d profiles, the last %+v", len(page), page[len(page)-1])
		}

		if plain.Dialect() != bunstore.DialectPostgres {
			return
		}
		err = s.Do(ctx, func(ctx context.Context) error {
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 99), 100); err != nil {
				return err
			}
			e, err := event.New("evt_1", "tm_1", event.ProfileCreated, at, map[string]any{})
			if err != nil {
				return err
			}
			return s.Outbox().Append(ctx, e)
		})
		if err != nil {
			t.Fatal(err)
		}
		// BEGIN, the profile with its count and tags, the event, COMMIT.
		wantStatements(t, "a create's unit", stmts.take(), 4)
	})
}
