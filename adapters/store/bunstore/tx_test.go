package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// pinnedConn is one connection of db of its own, closed when the test ends.
func pinnedConn(t *testing.T, db *bun.DB) bun.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// writingTx begins a transaction on c that inserts who into commit_probe,
// so that it has an id, and returns it with its id and server process.
func writingTx(t *testing.T, c bun.Conn, who string) (tx bun.Tx, xid string, pid int) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.NewRaw("INSERT INTO commit_probe (who) VALUES (?)", who).Exec(ctx); err != nil {
		t.Fatalf("insert %s: %v", who, err)
	}
	xid, pid, err = bunstore.CurrentXact(ctx, tx)
	if err != nil || xid == "" || pid == 0 {
		t.Fatalf("transaction of %s: xid %q, pid %d, %v", who, xid, pid, err)
	}
	return tx, xid, pid
}

// answers runs SELECT 1 on q.
func answers(q bun.IDB) error {
	var one int
	if err := q.NewRaw("SELECT 1").Scan(context.Background(), &one); err != nil {
		return err
	}
	if one != 1 {
		return fmt.Errorf("SELECT 1 answered %d", one)
	}
	return nil
}

// A COMMIT left without an answer is resolved by ending the server process
// that still runs its transaction, and no other: a pid that now belongs to
// another connection (the transaction's process exited and the pid was
// reused) names no process to end, whether that connection is idle or in
// a transaction of its own.
func TestUnansweredCommitsEndOnlyTheProcessOfTheirTransaction(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	ctx := context.Background()
	db := bunstore.DB(s)
	if _, err := db.ExecContext(ctx, "CREATE TABLE commit_probe (who text)"); err != nil {
		t.Fatal(err)
	}
	commitErr := errors.New("commit: connection reset")

	// B's COMMIT went unanswered; its transaction is still in progress.
	b := pinnedConn(t, db)
	txB, xidB, pidB := writingTx(t, b, "b")

	// A is another connection, given B's transaction with A's pid.
	a := pinnedConn(t, db)
	var pidA int
	if err := a.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pidA); err != nil {
		t.Fatal(err)
	}
	if pidA == pidB {
		t.Fatalf("A and B share the server process %d", pidA)
	}

	// A idle.
	if ended, err := bunstore.EndXact(ctx, s, xidB, pidA); ended || err != nil {
		t.Fatalf("ending B's transaction %s at idle A's pid: ended %v, %v; want false, nil", xidB, ended, err)
	}
	if err := answers(a); err != nil {
		t.Fatalf("idle A after its pid was given with B's transaction: %v", err)
	}

	// A in a transaction of its own that wrote.
	txA, xidA, _ := writingTx(t, a, "a")
	if xidA == xidB {
		t.Fatalf("A and B share the transaction %s", xidA)
	}
	if ended, err := bunstore.EndXact(ctx, s, xidB, pidA); ended || err != nil {
		t.Fatalf("ending B's transaction %s at A's pid, A in %s: ended %v, %v; want false, nil", xidB, xidA, ended, err)
	}
	err := bunstore.ResolveCommit(ctx, s, xidB, pidA, commitErr)
	if !errors.Is(err, commitErr) || !strings.Contains(err.Error(), "the transaction is in progress") {
		t.Fatalf("resolving B's commit with A's pid: %v; want B found still in progress, wrapping the commit's error", err)
	}
	if err := answers(txA); err != nil {
		t.Fatalf("A in its own transaction after its pid was given with B's: %v", err)
	}
	if err := txA.Commit(); err != nil {
		t.Fatalf("A's commit: %v", err)
	}
	if err := answers(txB); err != nil {
		t.Fatalf("B, never named by its own pid: %v", err)
	}

	// B's own pid and transaction: B is ended, and its transaction rolled back.
	err = bunstore.ResolveCommit(ctx, s, xidB, pidB, commitErr)
	if !errors.Is(err, commitErr) || !strings.Contains(err.Error(), "the transaction was rolled back") {
		t.Fatalf("resolving B's commit: %v; want it rolled back, wrapping the commit's error", err)
	}
	if err := answers(txB); err == nil {
		t.Fatal("B still answers after its transaction was resolved by ending it")
	}
	var status string
	if err := db.NewRaw("SELECT pg_xact_status(?::xid8)", xidB).Scan(ctx, &status); err != nil || status != "aborted" {
		t.Fatalf("pg_xact_status of B's transaction: %q, %v; want aborted", status, err)
	}
	var rows []string
	if err := db.NewRaw("SELECT who FROM commit_probe ORDER BY who").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows, ",") != "a" {
		t.Fatalf("commit_probe holds %q, want only A's row", rows)
	}

	// endXact says that it ended one.
	c := pinnedConn(t, db)
	txC, xidC, pidC := writingTx(t, c, "c")
	if ended, err := bunstore.EndXact(ctx, s, xidC, pidC); !ended || err != nil {
		t.Fatalf("ending C's transaction %s at its own pid %d: ended %v, %v; want true, nil", xidC, pidC, ended, err)
	}
	if err := answers(txC); err == nil {
		t.Fatal("C still answers after its process was ended")
	}
}
