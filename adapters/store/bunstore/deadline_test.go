package bunstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func openWithQueryTimeout(t *testing.T, timeout time.Duration) *bunstore.Store {
	t.Helper()
	o := testenv.StoreOptions(t, testenv.PostgresURL(t))
	o.QueryTimeout = timeout
	s, err := bunstore.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPostgresStatementsHaveADeadline(t *testing.T) {
	t.Parallel()
	s := openWithQueryTimeout(t, 300*time.Millisecond)
	ctx := context.Background()
	_, err := s.DB().ExecContext(ctx, "SELECT pg_sleep(5)")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a statement longer than the timeout: %v, want the deadline exceeded", err)
	}
	// The store is usable again at once.
	var one int
	if err := s.DB().NewSelect().ColumnExpr("1").Scan(ctx, &one); err != nil || one != 1 {
		t.Fatalf("next statement: %d, %v", one, err)
	}
}

func TestPostgresTransactionsSurviveTheirBegin(t *testing.T) {
	t.Parallel()
	s := openWithQueryTimeout(t, 2*time.Second)
	ctx := context.Background()
	var n int
	err := s.Do(ctx, func(ctx context.Context) error {
		for range 3 {
			if err := s.DB().NewSelect().ColumnExpr("1").Scan(ctx, &n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a transaction well within the timeout: %v", err)
	}
}

func TestPostgresTransactionsEndAtTheTimeout(t *testing.T) {
	t.Parallel()
	s := openWithQueryTimeout(t, 300*time.Millisecond)
	err := s.Do(context.Background(), func(ctx context.Context) error {
		for {
			// Short statements, each within the timeout, that together
			// outlast it.
			if _, err := s.DB().ExecContext(ctx, "SELECT pg_sleep(0.1)"); err != nil {
				return err
			}
		}
	})
	if err == nil {
		t.Fatal("a transaction outlasting the timeout committed")
	}
}
