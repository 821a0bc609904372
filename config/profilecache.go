package config

import "time"

// ProfileCache is the read-through cache of profiles that PROFILE_CACHE
// turns on.
type ProfileCache struct {
	// Kind is "off" (the default: every read goes to the database) or
	// "redis", which needs REDIS_URL.
	Kind string
	// TTL is how long an entry lives: it bounds how long an instance may
	// read an entry whose drop could not reach Redis during an outage.
	TTL time.Duration
}

// ProfileCacheRedis is ProfileCache.Kind for the Redis cache.
const ProfileCacheRedis = "redis"

func (l *loader) profileCache(redisURL string) ProfileCache {
	pc := ProfileCache{
		Kind: l.oneOf("PROFILE_CACHE", "off", "off", ProfileCacheRedis),
		TTL:  l.duration("PROFILE_CACHE_TTL", time.Minute),
	}
	if pc.Kind == ProfileCacheRedis && redisURL == "" {
		l.fail("PROFILE_CACHE", "redis needs REDIS_URL: the cache must be shared by every instance")
	}
	return pc
}
