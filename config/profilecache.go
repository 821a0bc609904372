package config

import "time"

// ProfileCache is the read-through cache of profiles that PROFILE_CACHE
// selects.
type ProfileCache struct {
	// Kind is "off" (every read goes to the database), "redis", which
	// needs REDIS_URL, or "local", in this process, for SQLite only: the
	// service locks the file, so every write that must drop an entry goes
	// through this process. It is "local" by default on SQLite, "off" on
	// the other stores.
	Kind string
	// TTL is how long an entry lives: it bounds how long an instance may
	// read an entry whose drop could not reach Redis during an outage.
	TTL time.Duration
}

// ProfileCache.Kind for no cache, the Redis cache and the in-process one.
const (
	ProfileCacheOff   = "off"
	ProfileCacheRedis = "redis"
	ProfileCacheLocal = "local"
)

func (l *loader) profileCache(redisURL string, db Database) ProfileCache {
	def := ProfileCacheOff
	if db.Kind == DatabaseSQLite {
		def = ProfileCacheLocal
	}
	pc := ProfileCache{
		Kind: l.oneOf("PROFILE_CACHE", def, ProfileCacheOff, ProfileCacheRedis, ProfileCacheLocal),
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
