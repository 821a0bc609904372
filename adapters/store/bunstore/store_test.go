package bunstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// forEachDialect runs fn against a fresh, migrated SQLite store and, when
// TEST_DATABASE_URL is set, a fresh PostgreSQL store.
func forEachDialect(t *testing.T, fn func(t *testing.T, s *bunstore.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, openStore(t, testenv.SQLiteURL(t))) })
	t.Run("postgres", func(t *testing.T) { fn(t, openStore(t, testenv.PostgresURL(t))) })
}

func openStore(t *testing.T, url string) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), testenv.StoreOptions(t, url))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// at has nanoseconds that no SQL store keeps and a zone that is not UTC.
var at = time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CEST", 2*3600))

func seed(t *testing.T, r storage.Store, userID, teamID, email string) {
	t.Helper()
	ctx := context.Background()
	if err := r.Teams().Create(ctx, team.Team{ID: teamID, Name: "T", CreatedAt: at}); err != nil {
		t.Fatalf("create team: %v", err)
	}
	u := account.User{ID: userID, Email: email, Name: "U", PasswordHash: "h", DefaultTeamID: teamID, CreatedAt: at, UpdatedAt: at}
	if err := r.Users().Create(ctx, u); err != nil {
		t.Fatalf("create user: %v", err)
	}
}

func TestOpenRejectsIncompleteOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    bunstore.Options
		want string
	}{
		{bunstore.Options{Dialect: "mysql", DSN: "mysql://user:secret@host/db"}, `unknown dialect "mysql"`},
		{bunstore.Options{Dialect: bunstore.DialectSQLite}, "sqlite needs a file path"},
		{bunstore.Options{Dialect: bunstore.DialectPostgres}, "postgres needs a DSN"},
	} {
		_, err := bunstore.Open(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want %q", c.o, err, c.want)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%+v) error leaks the password: %v", c.o, err)
		}
	}
}

func TestOpenSQLiteCreatesDirectory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b", "db.sqlite")
	s := openStore(t, "sqlite://"+path)
	if s.Dialect() != bunstore.DialectSQLite {
		t.Fatalf("Dialect = %q", s.Dialect())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestOpenSQLiteInMemory(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite://:memory:")
	seed(t, s, "usr_1", "team_1", "a@example.com")
	if _, err := s.Users().ByID(context.Background(), "usr_1"); err != nil {
		t.Fatalf("ByID: %v", err)
	}
}

func TestTimesComeBackInUTCToTheMicrosecond(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, s *bunstore.Store) {
		seed(t, s, "usr_1", "team_1", "a@example.com")
		u, err := s.Users().ByID(context.Background(), "usr_1")
		if err != nil {
			t.Fatal(err)
		}
		want := at.UTC().Truncate(time.Microsecond)
		if !u.CreatedAt.Equal(want) || u.CreatedAt.Location() != time.UTC {
			t.Fatalf("CreatedAt = %v, want %v in UTC", u.CreatedAt, want)
		}
	})
}

func TestUniqueViolationsAreConflicts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, s *bunstore.Store) {
		ctx := context.Background()
		seed(t, s, "usr_1", "team_1", "a@example.com")
		u := account.User{ID: "usr_2", Email: "a@example.com", Name: "U", PasswordHash: "h", DefaultTeamID: "team_1", CreatedAt: at, UpdatedAt: at}
		if err := s.Users().Create(ctx, u); !domain.IsKind(err, domain.KindConflict) {
			t.Fatalf("second user with one email: err = %v, want conflict", err)
		}
		m := team.NewOwner("mem_1", "team_1", "usr_1", "a@example.com", at)
		if err := s.Memberships().Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		m.ID = "mem_2"
		if err := s.Memberships().Create(ctx, m); !domain.IsKind(err, domain.KindConflict) {
			t.Fatalf("second membership: err = %v, want conflict", err)
		}
	})
}

func TestOutboxKeepsTheExactBytes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, s *bunstore.Store) {
		ctx := context.Background()
		// Spacing, key order and a duplicate key that jsonb would all rewrite.
		data := json.RawMessage(`{ "z": 1,  "a": {"k":"v"}, "z": 2 }`)
		for _, id := range []string{"evt_B", "evt_a", "evt_A"} {
			e := event.Event{ID: id, TeamID: "team_1", Type: event.ProfileCreated, OccurredAt: at, Data: data}
			if err := s.Outbox().Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Outbox().ListAfter(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
			if string(e.Data) != string(data) {
				t.Fatalf("Data = %s, want %s", e.Data, data)
			}
		}
		// Byte order, as Go compares strings.
		if strings.Join(ids, ",") != "evt_A,evt_B,evt_a" {
			t.Fatalf("ids = %v", ids)
		}
		after, err := s.Outbox().ListAfter(ctx, "evt_A", 1)
		if err != nil || len(after) != 1 || after[0].ID != "evt_B" {
			t.Fatalf("ListAfter(evt_A, 1) = %v, %v", after, err)
		}
	})
}

func TestDoRollsBackOnErrorAndPanic(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, s *bunstore.Store) {
		ctx := context.Background()
		appendEvent := func(ctx context.Context, id string) {
			t.Helper()
			e := event.Event{ID: id, TeamID: "team_1", Type: event.ProfileCreated, OccurredAt: at, Data: json.RawMessage(`{}`)}
			if err := s.Outbox().Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		boom := errors.New("boom")
		err := s.Do(ctx, func(ctx context.Context) error {
			appendEvent(ctx, "evt_1")
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Do = %v, want boom", err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Do swallowed the panic")
				}
			}()
			_ = s.Do(ctx, func(ctx context.Context) error {
				appendEvent(ctx, "evt_2")
				panic("boom")
			})
		}()
		if err := s.Do(ctx, func(ctx context.Context) error {
			appendEvent(ctx, "evt_3")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Outbox().ListAfter(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != "evt_3" {
			t.Fatalf("outbox = %v, want only evt_3", got)
		}
	})
}

func TestConsumeHasOneWinner(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, s *bunstore.Store) {
		ctx := context.Background()
		seed(t, s, "usr_1", "team_1", "a@example.com")
		tok := account.RefreshToken{ID: "rt_1", FamilyID: "fam_1", UserID: "usr_1", TeamID: "team_1",
			Hash: []byte{0, 1, 2, 255}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
		if err := s.RefreshTokens().Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
		const callers = 8
		var wg sync.WaitGroup
		wins := make(chan bool, callers)
		for range callers {
			wg.Go(func() {
				ok, err := s.RefreshTokens().Consume(ctx, "rt_1", at)
				if err != nil {
					t.Error(err)
				}
				wins <- ok
			})
		}
		wg.Wait()
		close(wins)
		n := 0
		for ok := range wins {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d callers consumed the token, want 1", n)
		}
		got, err := s.RefreshTokens().ByID(ctx, "rt_1")
		if err != nil {
			t.Fatal(err)
		}
		if got.UsedAt == nil || string(got.Hash) != string(tok.Hash) {
			t.Fatalf("token = %+v", got)
		}
		if _, err := s.RefreshTokens().Consume(ctx, "rt_missing", at); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("Consume(missing) err = %v, want not found", err)
		}
	})
}

// TestSQLiteFilesAreTheOwnersAlone: the database and its -wal and -shm files
// hold password hashes and sealed secrets, so only their owner may read
// them, also for a database file that already existed with a wider mode.
func TestSQLiteFilesAreTheOwnersAlone(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "profilesvc.db")
		if existing {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := openStore(t, "sqlite://"+path)
		seed(t, s, "usr_perm", "tm_perm", "perm@example.com")
		for _, name := range []string{"profilesvc.db", "profilesvc.db-wal", "profilesvc.db-shm"} {
			info, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("existing=%v: %s: %v", existing, name, err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("existing=%v: %s has mode %o, want 600", existing, name, perm)
			}
		}
	}
}
