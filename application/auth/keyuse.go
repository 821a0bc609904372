package auth

import (
	"context"
	"sync"
	"time"
)

// keyUseResolution is how precise an API key's lastUsedAt is: each
// instance records a key's use at most once per this long, so that a busy
// key costs one write a minute, not one per request.
const keyUseResolution = time.Minute

// keyUsesKept bounds the keys whose last recorded use an instance
// remembers; past it, those recorded more than keyUseResolution ago are
// forgotten (recording them again is harmless).
const keyUsesKept = 4096

// keyUses remembers when this instance last recorded each key's use.
type keyUses struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether a use of the key at now should be recorded, and if
// so counts it as recorded.
func (u *keyUses) due(id string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if last, ok := u.last[id]; ok && now.Sub(last) < keyUseResolution {
		return false
	}
	if u.last == nil {
		u.last = map[string]time.Time{}
	}
	if len(u.last) >= keyUsesKept {
		for k, t := range u.last {
			if now.Sub(t) >= keyUseResolution {
				delete(u.last, k)
			}
		}
	}
	u.last[id] = now
	return true
}

// recordKeyUse sets the key's lastUsedAt, at most once per
// keyUseResolution. A failure is logged and does not fail the request: the
// time of last use is a hint to the key's owner, not a part of the
// request's work.
func (s *Service) recordKeyUse(ctx context.Context, id string) {
	now := s.d.Clock.Now()
	if !s.keyUses.due(id, now) {
		return
	}
	if err := s.d.APIKeys.Touch(ctx, id, now); err != nil {
		s.d.Log.WarnContext(ctx, "recording an API key's use failed", "api_key_id", id, "error", err.Error())
	}
}
