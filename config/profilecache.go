package config

import "time"

// ProfileCache is the read-through cache of profiles that PROFILE_CACHE
// turns on.
type ProfileCache struct {
	// Kind is "off" (the default: every read goes to the database),
	// "redis", which needs REDIS_URL, or "local", in this process, for
	// SQLite only: a store one instance uses, so every write that must
	// drop an entry goes through that instance.
	Kind string
	// TTL is how long an entry lives: it bounds how long an instance may
	// read an entry whose drop could not reach Redis during an outage.
	TTL time.Duration
}

// ProfileCache.Kind for the Redis cache and the in-process one.
const (
	ProfileCacheRedis = "redis"
	ProfileCacheLocal = "local"
)

func (l *loader) profileCache(redisURL string, db Database) ProfileCache {
	pc := ProfileCache{
		Kind: l.oneOf("PROFILE_CACHE", "off", "off", ProfileCacheRedis, ProfileCacheLocal),
		TTL:  l.duration("PROFILE_CACHE_TTL", time.Minute),
	}
	if pc.Kind == ProfileCacheRedis && redisURL == "" {
		l.fail("PROFILE_CACHE", "redis needs REDIS_URL: the cache must be shared by every instance")
	}
	if pc.Kind == ProfileCacheLocal && db.Kind != DatabaseSQLite {
		l.fail("PROFILE_CACHE", "local needs a SQLite DATABASE_URL: with a database several instances share, another instance's write would leave this one's copy stale (use redis)")
	}
	return pc
}
