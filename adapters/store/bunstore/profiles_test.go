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
	"github.com/profilesvc/profilesvc/domain/event"
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

// benchDevice is the device of the profiles benchmarks read and write:
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

// A profile read is one round trip, tags and proxy view included, that
// prepares nothing once its statement is cached; a page of 50 is one; a
// create's unit on PostgreSQL is BEGIN, a savepoint, one statement for the
// profile, its count and its tags, one for the event, COMMIT.
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
			if err := s.Profiles().Create(ctx, p); err != nil {
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

		if s.Dialect() != bunstore.DialectPostgres {
			return
		}
		// The 50 above went to any shard, without a bound. The first
		// create under one, 100, finds its shard carrying none, so it
		// locks and adds up every shard, spreads the count by the shares
		// of the total (3 or 4 each) and marks them with 100: then every
		// shard has room under it (6 or 7 each), and the next create,
		// the one measured, takes the first shard it picks.
		if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 98), 100); err != nil {
			t.Fatal(err)
		}
		stmts.take()
		// Alone, a create and its event are one statement, committed on
		// its own, and the shard is given back when it returns.
		created, err := event.New("evt_0", "tm_1", event.ProfileCreated, at, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 97), 100, created); err != nil {
			t.Fatal(err)
		}
		wantStatements(t, "a create alone", stmts.take(), 1)
		if n := bunstore.ShardsHeld(); n != 0 {
			t.Fatalf("after a create alone, %d shards are held, want 0", n)
		}
		err = s.Do(ctx, func(ctx context.Context) error {
			if err := s.Profiles().CreateWithin(ctx, benchProfile("tm_1", 99), 100); err != nil {
				return err
			}
			if n := bunstore.ShardsHeld(); n != 1 {
				t.Errorf("inside the unit, %d shards are held, want the create's 1", n)
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
		// BEGIN, the savepoint, the profile with its count and tags, the
		// event, COMMIT.
		wantStatements(t, "a create's unit", stmts.take(), 5)
		if n := bunstore.ShardsHeld(); n != 0 {
			t.Fatalf("after the unit, %d shards are held, want 0", n)
		}
	})
}

// The PostgreSQL read names every column of bun's model of a profile row,
// in the model's order, so that a column added to one is added to the
// other.
func TestProfileReadScansEveryColumn(t *testing.T) {
	t.Parallel()
	model, scanned := bunstore.ProfileColumns(openStore(t, testenv.SQLiteURL(t)))
	if strings.Join(model, ",") != strings.Join(scanned, ",") {
		t.Fatalf("the PostgreSQL read scans\n%v\nthe model has\n%v", scanned, model)
	}
	if len(model) < 30 {
		t.Fatalf("the model lists %d columns: %v", len(model), model)
	}
}

// Each connection of the service's pool counts its changes of a team's
// list (the trigger of profile_list_changes) in a shard of its own, named
// when it connects: concurrent writers of one team never queue on one
// count row for it.
func TestConnectionsCountListChangesInShardsOfTheirOwn(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	ctx := context.Background()
	p := benchProfile("tm_list", 1)
	if err := s.Profiles().Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	changes := func(shard int) (inShard, total int64) {
		t.Helper()
		err := bunstore.DB(s).NewRaw(`SELECT coalesce(sum(changes) FILTER (WHERE shard = ?), 0), coalesce(sum(changes), 0)
			FROM team_profile_counts WHERE team_id = ?`, shard, p.TeamID).Scan(ctx, &inShard, &total)
		if err != nil {
			t.Fatal(err)
		}
		return inShard, total
	}
	seen := map[int]bool{}
	for i := range 4 { // held together: four connections of the pool
		c, err := bunstore.DB(s).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var shard int
		if err := c.QueryRowContext(ctx, "SELECT current_setting('profilesvc.list_shard')::integer").Scan(&shard); err != nil {
			t.Fatal(err)
		}
		if shard < 0 || shard > 15 || seen[shard] {
			t.Fatalf("connection %d counts in shard %d; shards of the others: %v", i, shard, seen)
		}
		seen[shard] = true
		inShard, total := changes(shard)
		if _, err := c.ExecContext(ctx, "UPDATE profiles SET notes = ? WHERE id = ?", fmt.Sprint("note ", i), p.ID); err != nil {
			t.Fatal(err)
		}
		if afterShard, afterTotal := changes(shard); afterShard != inShard+1 || afterTotal != total+1 {
			t.Fatalf("an update on connection %d: shard %d counts %d -> %d changes, the team %d -> %d; want one more each",
				i, shard, inShard, afterShard, total, afterTotal)
		}
	}
}
