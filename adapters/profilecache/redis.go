// Package profilecache owns the Redis read-through cache of profiles
// (PROFILE_CACHE=redis): entries, the leases that keep a reader from
// writing back a row a writer has replaced, and the fallback to the
// database while Redis does not answer.
package profilecache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var _ profilestore.Cache = (*Redis)(nil)

// Guard decides whether a call may go to Redis and learns from how it went
// (redisguard.Guard): its error for a call skipped or unanswered is
// domain.KindUnavailable.
type Guard interface {
	Do(ctx context.Context, component string, op func(context.Context) error) error
}

const component = "profile_cache"

// An entry's value is a profile ("v" and its encoding, codec.go) or a reader's lease ("l"
// and a random token).
const (
	valueTag = "v"
	leaseTag = "l"
)

// leaseTTL bounds how long a reader that stopped between its miss and its
// fill keeps others from filling.
const leaseTTL = 5 * time.Second

// maxPendingDrops bounds the drops kept while Redis does not answer; past
// it, Drop fails.
const maxPendingDrops = 10_000

// getOrLease returns the entry, or sets the caller's lease on a missing one
// and returns nothing.
var getOrLease = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`)

// fillLeased replaces the caller's lease with the value; a lease that is
// gone (dropped, or taken over after it expired) leaves the entry alone.
var fillLeased = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`)

// Redis is the profile cache in Redis, shared by every instance with the
// same Redis and prefix.
type Redis struct {
	client redis.UniversalClient
	guard  Guard
	prefix string
	ttl    time.Duration

	// pending are the drops that did not reach Redis: those entries are
	// neither read nor filled here until Redis has deleted them.
	mu      sync.Mutex
	pending map[string]struct{}

	gets getBatch
}

// New returns the cache, keeping entries under prefix for ttl: the ttl
// bounds how long another instance may read an entry whose drop could not
// reach Redis.
func New(client redis.UniversalClient, guard Guard, prefix string, ttl time.Duration) *Redis {
	r := &Redis{client: client, guard: guard, prefix: prefix, ttl: ttl, pending: map[string]struct{}{}}
	r.gets.send = r.sendGets
	return r
}

// sendGets runs the GETs of keys, one pipeline for several: an entry's
// absence (redis.Nil) or another reply of Redis is that key's own result;
// a pipeline Redis did not answer fails every key.
func (r *Redis) sendGets(ctx context.Context, keys []string) ([]getResult, error) {
	out := make([]getResult, len(keys))
	if len(keys) == 1 {
		err := r.guard.Do(ctx, component, func(ctx context.Context) error {
			out[0].val, out[0].err = r.client.Get(ctx, keys[0]).Result()
			return out[0].err
		})
		return out, unanswered(err)
	}
	err := r.guard.Do(ctx, component, func(ctx context.Context) error {
		pipe := r.client.Pipeline()
		cmds := make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.Get(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		for i, c := range cmds {
			out[i].val, out[i].err = c.Result()
		}
		return err
	})
	return out, unanswered(err)
}

// unanswered is err unless Redis answered it (redis.Nil included): then
// the keys' own results tell.
func unanswered(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		return nil
	}
	return err
}

// key includes the team, so one team's id never reads another's entry.
func (r *Redis) key(teamID, id string) string { return r.prefix + teamID + ":" + id }

// Get reads the entry, leasing it on a miss; any failure is a miss without
// a lease. A hit is one plain GET, sent with those of concurrent readers
// (getBatch): only a missing entry runs the script that leases it, which
// cost Redis several times a GET's work.
func (r *Redis) Get(ctx context.Context, teamID, id string) (profile.Profile, bool, string) {
	key := r.key(teamID, id)
	if r.flushPending(ctx, key) {
		return profile.Profile{}, false, ""
	}
	v, err := r.gets.get(ctx, key)
	if errors.Is(err, redis.Nil) {
		var token string
		if token, err = newToken(); err != nil {
			return profile.Profile{}, false, ""
		}
		err = r.guard.Do(ctx, component, func(ctx context.Context) error {
			var err error
			v, err = getOrLease.Run(ctx, r.client, []string{key}, token, leaseTTL.Milliseconds()).Text()
			return err
		})
		if errors.Is(err, redis.Nil) {
			return profile.Profile{}, false, token
		}
	}
	if err != nil {
		return profile.Profile{}, false, ""
	}
	body, isValue := strings.CutPrefix(v, valueTag)
	if !isValue {
		return profile.Profile{}, false, "" // another reader's lease
	}
	p, err := decodeProfile([]byte(body))
	if err != nil || p.TeamID != teamID || p.ID != id {
		return profile.Profile{}, false, ""
	}
	return p, true, ""
}

// Fill stores p if lease still holds the entry; failures leave the entry
// to the next reader.
func (r *Redis) Fill(ctx context.Context, teamID, id, lease string, p profile.Profile) {
	key := r.key(teamID, id)
	if lease == "" || r.flushPending(ctx, key) {
		return
	}
	body := encodeProfile(p)
	_ = r.guard.Do(ctx, component, func(ctx context.Context) error {
		return fillLeased.Run(ctx, r.client, []string{key}, lease, valueTag+string(body), r.ttl.Milliseconds()).Err()
	})
}

// Drop deletes the entry and the team's list version, in one DEL. When
// Redis does not answer, the drop is kept: no read here uses either, and
// they are deleted before anything else once Redis answers.
func (r *Redis) Drop(ctx context.Context, teamID, id string) error {
	if err := r.drop(ctx, r.key(teamID, id), r.listKey(teamID)); err != nil {
		return fmt.Errorf("profilecache: drop %s: %w", id, err)
	}
	return nil
}

// listKey holds a team's list version; no profile id is empty, so no
// entry has it.
func (r *Redis) listKey(teamID string) string { return r.key(teamID, "") }

// ListVersion reads the team's list version, a random token like a lease's,
// sent with concurrent readers' GETs. A team with none gets one, kept for
// the cache's ttl: an instance may keep copies of the list that long
// (a version that expired is replaced by a new token, never by the old).
func (r *Redis) ListVersion(ctx context.Context, teamID string) string {
	key := r.listKey(teamID)
	if r.flushPending(ctx, key) {
		return ""
	}
	v, err := r.gets.get(ctx, key)
	if errors.Is(err, redis.Nil) {
		if v, err = newToken(); err != nil {
			return ""
		}
		var set bool
		err = r.guard.Do(ctx, component, func(ctx context.Context) error {
			var err error
			set, err = r.client.SetNX(ctx, key, v, r.ttl).Result()
			return err
		})
		if err == nil && !set {
			return "" // another reader's, read by the next
		}
	}
	if err != nil {
		return ""
	}
	return v
}

// DropList deletes the team's list version, kept like an entry's drop
// when Redis does not answer.
func (r *Redis) DropList(ctx context.Context, teamID string) error {
	if err := r.drop(ctx, r.listKey(teamID)); err != nil {
		return fmt.Errorf("profilecache: drop the list of %s: %w", teamID, err)
	}
	return nil
}

func (r *Redis) drop(ctx context.Context, keys ...string) error {
	r.flushPending(ctx, "")
	err := r.guard.Do(ctx, component, func(ctx context.Context) error { return r.client.Del(ctx, keys...).Err() })
	if err == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending)+len(keys) > maxPendingDrops {
		return err
	}
	for _, k := range keys {
		r.pending[k] = struct{}{}
	}
	return nil
}

// flushPending deletes the kept drops when there are any and Redis
// answers, and reports whether key is still among them.
func (r *Redis) flushPending(ctx context.Context, key string) bool {
	r.mu.Lock()
	if len(r.pending) == 0 {
		r.mu.Unlock()
		return false
	}
	keys := make([]string, 0, len(r.pending))
	for k := range r.pending {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	err := r.guard.Do(ctx, component, func(ctx context.Context) error { return r.client.Del(ctx, keys...).Err() })
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		for _, k := range keys {
			delete(r.pending, k)
		}
	}
	_, kept := r.pending[key]
	return kept
}

// newToken is a lease's value: random, so that no two readers share one.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return leaseTag + hex.EncodeToString(b[:]), nil
}
