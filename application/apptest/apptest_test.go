package apptest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports"
)

var ctx = context.Background()

func TestIDsCountAcrossOrPerPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  *apptest.IDs
		want []string
	}{
		{"one count", apptest.NewIDs(), []string{"prf_00000000000000000001", "ses_00000000000000000002", "prf_00000000000000000003"}},
		{"per prefix", apptest.NewPrefixIDs(), []string{"prf_001", "ses_001", "prf_002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{tc.ids.New("prf"), tc.ids.New("ses"), tc.ids.New("prf")}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ids %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMailerKeepsOrRefuses(t *testing.T) {
	m := &apptest.Mailer{}
	if _, ok := m.TokenAfter("Token: "); ok {
		t.Fatal("a token before any mail")
	}
	first := ports.Mail{To: "ada@example.com", Text: "Token: one\nbye"}
	second := ports.Mail{To: "bob@example.com", Text: "Hello\nToken: two"}
	for _, msg := range []ports.Mail{first, second} {
		if err := m.Send(ctx, msg); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if tok, ok := m.TokenAfter("Token: "); !ok || tok != "two" {
		t.Fatalf("token %q, %t; want the last mail's", tok, ok)
	}
	if tok, ok := m.TokenAfter("Code: "); ok {
		t.Fatalf("token %q for a label no mail states", tok)
	}

	down := errors.New("smtp: down")
	m.Err = down
	if err := m.Send(ctx, ports.Mail{To: "cat@example.com"}); !errors.Is(err, down) {
		t.Fatalf("err = %v, want %v", err, down)
	}
	if got := m.Sent(); !slices.Equal(got, []ports.Mail{first, second}) {
		t.Fatalf("sent %+v", got)
	}
}

func TestLogsKeepLinesWithTheirAttributes(t *testing.T) {
	logs := &apptest.Logs{}
	log := logs.Logger()
	log.Info("plain")
	log.With("delivery_id", "dlv_1").WithGroup("ignored").Warn("late", "error", "gone")

	want := []string{"INFO plain", "WARN late delivery_id=dlv_1 error=gone"}
	if got := logs.Lines(); !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if !logs.Has("WARN late") || logs.Has("WARN late error=gone") || logs.Has("ERROR late") {
		t.Fatal("Has does not match on level and message alone")
	}
}

func TestFailingStoresAnswerTheirError(t *testing.T) {
	down := errors.New("db: down")
	if err := (apptest.RefusingOutbox{Err: down}).Append(ctx, event.Event{}); !errors.Is(err, down) {
		t.Fatalf("append: %v", err)
	}
	u := apptest.UnreadableUsers{Err: down}
	_, byID := u.ByID(ctx, "usr_1")
	_, byEmail := u.ByEmail(ctx, "ada@example.com")
	_, list := u.ListByIDs(ctx, []string{"usr_1"})
	for _, err := range []error{byID, byEmail, list} {
		if !errors.Is(err, down) {
			t.Fatalf("read: %v", err)
		}
	}
}

func TestConsumedMeanwhileSpendsTheRowItReturns(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	spent := map[string]time.Time{}
	byID := func(_ context.Context, id string) (string, error) {
		if id == "gone" {
			return "", errors.New("not found")
		}
		return "row " + id, nil
	}
	consume := func(_ context.Context, id string, when time.Time) (bool, error) {
		if _, ok := spent[id]; ok {
			return false, nil
		}
		spent[id] = when
		return true, nil
	}

	row, err := apptest.ConsumedMeanwhile(ctx, "inv_1", at, byID, consume)
	if err != nil || row != "row inv_1" || !spent["inv_1"].Equal(at) {
		t.Fatalf("row %q, %v; spent %v", row, err, spent)
	}
	if won, _ := consume(ctx, "inv_1", at); won {
		t.Fatal("the caller's consume won after the rival's")
	}
	if row, err := apptest.ConsumedMeanwhile(ctx, "inv_1", at, byID, consume); err == nil {
		t.Fatalf("a rival that could not consume answered %q", row)
	}
	if _, err := apptest.ConsumedMeanwhile(ctx, "gone", at, byID, consume); err == nil || err.Error() != "not found" {
		t.Fatalf("read error %v", err)
	}
}

// recordingTB notes a Fatalf instead of stopping the test.
type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true }

func TestWantKindAndWantDown(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(tb testing.TB)
		fail bool
	}{
		{"kind matches", func(tb testing.TB) { apptest.WantKind(tb, domain.NotFound("x"), domain.KindNotFound) }, false},
		{"kind differs", func(tb testing.TB) { apptest.WantKind(tb, domain.Conflict("x"), domain.KindNotFound) }, true},
		{"no error", func(tb testing.TB) { apptest.WantKind(tb, nil, domain.KindNotFound) }, true},
		{"down, wrapped", func(tb testing.TB) { apptest.WantDown(tb, fmt.Errorf("read: %w", apptest.ErrDown)) }, false},
		{"another error", func(tb testing.TB) { apptest.WantDown(tb, errors.New("backend is down")) }, true},
	} {
		r := &recordingTB{TB: t}
		c.run(r)
		if r.failed != c.fail {
			t.Errorf("%s: failed = %v, want %v", c.name, r.failed, c.fail)
		}
	}
}

func TestSeedStoresTheTeamsAndUsersTestsActIn(t *testing.T) {
	st := memory.New()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	apptest.Seed(t, st.Users(), st.Teams(), at, account.User{ID: "usr_ada", Email: "ada@example.com", Name: "Ada"})
	u, err := st.Users().ByID(ctx, "usr_ada")
	if err != nil || u.Email != "ada@example.com" || !u.CreatedAt.Equal(at) || !u.UpdatedAt.Equal(at) {
		t.Fatalf("user %+v, %v", u, err)
	}
	for _, id := range []string{"team_1", "team_2"} {
		if tm, err := st.Teams().ByID(ctx, id); err != nil || !tm.CreatedAt.Equal(at) {
			t.Fatalf("team %s: %+v, %v", id, tm, err)
		}
	}
}
