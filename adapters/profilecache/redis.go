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

// An entry's value is a profile (valueTag and its JSON, entry.go) or a
// reader's lease (leaseTag and a random token).
const leaseTag = "l"

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
}

// New returns the cache, keeping entries under prefix for ttl: the ttl
// bounds how long another instance may read an entry whose drop could not
// reach Redis.
func New(client redis.UniversalClient, guard Guard, prefix string, ttl time.Duration) *Redis {
	return &Redis{client: client, guard: guard, prefix: prefix, ttl: ttl, pending: map[string]struct{}{}}
}

// key includes the team, so one team's id never reads another's entry.
func (r *Redis) key(teamID, id string) string { return r.prefix + teamID + ":" + id }

// Get reads the entry, leasing it on a miss; any failure is a miss without
// a lease.
func (r *Redis) Get(ctx context.Context, teamID, id string) (profile.Profile, bool, string) {
	key := r.key(teamID, id)
	if r.flushPending(ctx, key) {
		return profile.Profile{}, false, ""
	}
	token, err := newToken()
	if err != nil {
		return profile.Profile{}, false, ""
	}
	var v string
	err = r.guard.Do(ctx, component, func(ctx context.Context) error {
		var err error
		v, err = getOrLease.Run(ctx, r.client, []string{key}, token, leaseTTL.Milliseconds()).Text()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return profile.Profile{}, false, token
	case err != nil:
		return profile.Profile{}, false, ""
	}
	body, isValue := strings.CutPrefix(v, valueTag)
	if !isValue {
		return profile.Profile{}, false, "" // another reader's lease
	}
	p, err := decodeEntry([]byte(body))
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
	body, err := encodeEntry(p)
	if err != nil {
		return
	}
	_ = r.guard.Do(ctx, component, func(ctx context.Context) error {
		return fillLeased.Run(ctx, r.client, []string{key}, lease, valueTag+string(body), r.ttl.Milliseconds()).Err()
	})
}

// Drop deletes the entry. When Redis does not answer, the drop is kept:
// no read here uses the entry, and it is deleted before anything else once
// Redis answers.
func (r *Redis) Drop(ctx context.Context, teamID, id string) error {
	key := r.key(teamID, id)
	r.flushPending(ctx, "")
	err := r.guard.Do(ctx, component, func(ctx context.Context) error { return r.client.Del(ctx, key).Err() })
	if err == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) >= maxPendingDrops {
		return fmt.Errorf("profilecache: drop %s: %w", id, err)
	}
	r.pending[key] = struct{}{}
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
