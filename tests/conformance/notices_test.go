package conformance_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/notices"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// probe is short so that a cut the transport does not report is noticed
// quickly; the suite never relies on it alone.
const probe = 200 * time.Millisecond

func TestLocalNotices(t *testing.T) {
	conformance.RunNotices(t, func(*testing.T) conformance.NoticesBus {
		n := notices.NewLocal()
		return conformance.NoticesBus{Instance: func(*testing.T) ports.Notices { return n }}
	})
}

func TestRedisNotices(t *testing.T) {
	testenv.RedisClient(t) // skips the suite when TEST_REDIS_URL is unset
	conformance.RunNotices(t, func(t *testing.T) conformance.NoticesBus {
		channel := testenv.UniqueName("notices-test-")
		// Every connection of the bus carries one name, so that Cut finds
		// them among other tests' connections.
		name := testenv.UniqueName("notices-")
		return conformance.NoticesBus{
			Instance: func(t *testing.T) ports.Notices {
				opts := *testenv.RedisClient(t).Options()
				opts.ClientName = name
				client := redis.NewClient(&opts)
				t.Cleanup(func() { _ = client.Close() })
				n := notices.NewRedis(client, channel, zap.NewNop(), notices.RedisOptions{ProbeEvery: probe})
				n.Start()
				t.Cleanup(n.Stop)
				return n
			},
			Cut: func(t *testing.T) { killRedisClients(t, testenv.RedisClient(t), name) },
		}
	})
}

// killRedisClients closes, from the server's side, every connection named
// name.
func killRedisClients(t *testing.T, admin *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for line := range strings.SplitSeq(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
		if err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
		killed++
	}
	if killed == 0 {
		t.Fatalf("no redis connection named %s to kill", name)
	}
}

// postgresBus is a PostgreSQL transport of its own: a channel and a name
// for the listening connections that no other test uses.
type postgresBus struct {
	dsn, channel, appName string
	db                    *sql.DB
}

func newPostgresBus(t *testing.T) postgresBus {
	dsn := testenv.PostgresURL(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return postgresBus{dsn: dsn, channel: testenv.UniqueName("notices_"), appName: testenv.UniqueName("notices-"), db: db}
}

func (b postgresBus) instance(t *testing.T) *notices.Postgres {
	n := notices.NewPostgres(b.dsn, b.channel, b.db, zap.NewNop(), notices.PostgresOptions{ProbeEvery: probe, ApplicationName: b.appName})
	n.Start()
	t.Cleanup(n.Stop)
	return n
}

func TestPostgresNotices(t *testing.T) {
	testenv.PostgresURL(t) // skips the suite when TEST_DATABASE_URL is unset
	conformance.RunNotices(t, func(t *testing.T) conformance.NoticesBus {
		b := newPostgresBus(t)
		return conformance.NoticesBus{
			Instance: func(t *testing.T) ports.Notices { return b.instance(t) },
			Cut: func(t *testing.T) {
				var killed int
				err := b.db.QueryRowContext(context.Background(),
					`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`,
					b.appName).Scan(&killed)
				if err != nil || killed == 0 {
					t.Fatalf("terminating the listeners: %d killed, %v", killed, err)
				}
			},
		}
	})
}

// A notification written in a transaction, in the wire form, is delivered
// when the transaction commits and not before: a marker notified after it
// but committed first arrives alone.
func TestPostgresNoticeInTransactionArrivesOnCommit(t *testing.T) {
	testenv.PostgresURL(t)
	b := newPostgresBus(t)
	n := b.instance(t)
	heard := conformance.Listen(t, n, "outbox")
	heard.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
	ctx := context.Background()
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", b.channel, notices.Wire("outbox", "in the transaction")); err != nil {
		t.Fatal(err)
	}
	if err := n.Publish(ctx, "outbox", "marker"); err != nil {
		t.Fatal(err)
	}
	heard.WaitFor(t, ports.Notice{Kind: ports.NoticeMessage, Payload: "marker"})
	if got := heard.Messages(); len(got) != 1 {
		t.Fatalf("before the commit heard %q, want only the marker", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	heard.WaitFor(t, ports.Notice{Kind: ports.NoticeMessage, Payload: "in the transaction"})
}

// A server that stops answering without closing the connection is noticed
// by the adapter's own probe: subscribers hear NoticeDeaf, and
// NoticeListening once the server answers again.
func TestNoticesHearAServerThatStopsAnswering(t *testing.T) {
	for name, subscribe := range map[string]func(t *testing.T, proxy *testenv.Proxy) ports.Notices{
		"redis": func(t *testing.T, proxy *testenv.Proxy) ports.Notices {
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DialTimeout: probe, ReadTimeout: probe,
				WriteTimeout: probe, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			n := notices.NewRedis(client, testenv.UniqueName("notices-test-"), zap.NewNop(), notices.RedisOptions{ProbeEvery: probe})
			n.Start()
			t.Cleanup(n.Stop)
			return n
		},
		"postgres": func(t *testing.T, proxy *testenv.Proxy) ports.Notices {
			b := newPostgresBus(t)
			u, err := url.Parse(b.dsn)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = proxy.Addr()
			b.dsn = u.String()
			return b.instance(t)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var target string
			if name == "redis" {
				target = testenv.RedisClient(t).Options().Addr
			} else {
				u, err := url.Parse(testenv.PostgresURL(t))
				if err != nil {
					t.Fatal(err)
				}
				target = u.Host
			}
			proxy := testenv.StartProxy(t, target)
			heard := conformance.Listen(t, subscribe(t, proxy), "t")
			heard.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
			proxy.Blackhole()
			heard.WaitFor(t, ports.Notice{Kind: ports.NoticeDeaf})
			proxy.Forward()
			heard.WaitForCount(t, ports.Notice{Kind: ports.NoticeListening}, 2)
		})
	}
}
