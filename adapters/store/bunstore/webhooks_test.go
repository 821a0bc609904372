package bunstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// planNode is what the claim test reads of an EXPLAIN (FORMAT JSON) node.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	SubplanName string     `json:"Subplan Name"`
	ActualRows  float64    `json:"Actual Rows"`
	ActualLoops float64    `json:"Actual Loops"`
	SharedHit   int        `json:"Shared Hit Blocks"`
	SharedRead  int        `json:"Shared Read Blocks"`
	Plans       []planNode `json:"Plans"`
}

// scanned sums the rows every scan node of the plan returned, over all its
// loops: the index entries and table rows the statement read.
func (n planNode) scanned() int {
	total := 0
	if strings.Contains(n.NodeType, "Scan") {
		total = int(n.ActualRows * n.ActualLoops)
	}
	for _, c := range n.Plans {
		total += c.scanned()
	}
	return total
}

// claimCost fills a fresh PostgreSQL store with pending deliveries, due,
// spread over three endpoints of one team, and returns the rows scanned
// and the buffers touched by one claim of ten of them to choose what it
// leases: the walk over the endpoints (CTE eps) and the reads of their
// first due deliveries (CTE picked). The UPDATE of the ten is left out:
// it writes ten rows whatever the backlog, and for a table of 100 rows
// the planner finds them with a scan of the whole table.
func claimCost(t *testing.T, pending int) (rows, buffers int) {
	t.Helper()
	ctx := context.Background()
	s := openStore(t, testenv.PostgresURL(t))
	due := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"whk_0", "whk_1", "whk_2"} {
		ep := webhook.NewEndpoint(id, "tm_1", "https://hooks.example.com/"+id, []string{"*"}, []byte("sealed"), due)
		if err := s.WebhookEndpoints().Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	db := bunstore.DB(s)
	_, err := db.ExecContext(ctx, `
INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, attempts,
                                started, round_start, next_attempt_at, claimable_at, created_at, updated_at)
SELECT 'dlv_' || lpad(g::text, 12, '0'), 'tm_1', 'whk_' || (g % 3), 'evt_' || g, 'profile.created', '{}',
       'pending', '[]', 0, 0, ?0, ?0, ?0, ?0
  FROM generate_series(1, ?1) AS g`, due, pending)
	if err != nil {
		t.Fatal(err)
	}
	// What autovacuum does after a bulk insert: the planner sees the rows.
	if _, err := db.ExecContext(ctx, "ANALYZE webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	now := due.Add(time.Second)
	c := webhookstore.DeliveryClaim{Owner: "a", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10}
	// A first run loads the pages the plan needs, so both sizes are
	// counted warm.
	if _, err := bunstore.ExplainClaim(ctx, s, c); err != nil {
		t.Fatal(err)
	}
	raw, err := bunstore.ExplainClaim(ctx, s, c)
	if err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	top := plans[0].Plan
	if top.ActualRows != 10 {
		t.Fatalf("the claim leased %v deliveries, want 10", top.ActualRows)
	}
	seen := map[string]bool{}
	for _, n := range top.Plans {
		if n.SubplanName == "CTE eps" || n.SubplanName == "CTE picked" {
			seen[n.SubplanName] = true
			rows += n.scanned()
			buffers += n.SharedHit + n.SharedRead
		}
	}
	if len(seen) != 2 {
		t.Fatalf("plan without the CTEs eps and picked: %s", raw)
	}
	return rows, buffers
}

// A claim reads the same rows, and about the same pages, with 100 or
// 100,000 deliveries waiting: it ranks none of them, it walks the endpoints
// and reads the first few due of each. The pages differ only by the depth
// of the index, two levels more: a few pages more (bounded here at four)
// for each of its seven descents (four steps of the walk, three endpoints'
// reads), where ranking every pending row would read thousands more.
func TestClaimCostDoesNotGrowWithTheBacklog(t *testing.T) {
	t.Parallel()
	rowsSmall, buffersSmall := claimCost(t, 100)
	rowsLarge, buffersLarge := claimCost(t, 100_000)
	t.Logf("claim of 10: 100 pending: %d rows, %d buffers; 100,000 pending: %d rows, %d buffers",
		rowsSmall, buffersSmall, rowsLarge, buffersLarge)
	if rowsLarge != rowsSmall {
		t.Errorf("rows scanned: %d with 100,000 pending, %d with 100", rowsLarge, rowsSmall)
	}
	if buffersLarge > buffersSmall+4*7 {
		t.Errorf("buffers touched: %d with 100,000 pending, %d with 100", buffersLarge, buffersSmall)
	}
}
