package config_test

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/config"
)

// On SQLite, which one process uses, the cache is in that process unless
// turned off; on the other stores there is none unless asked for, even
// with REDIS_URL set.
func TestProfileCacheDefaultsToLocalOnSQLiteAlone(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "local"},
		{map[string]string{"DATABASE_URL": "sqlite://./data/other.db", "REDIS_URL": "redis://127.0.0.1:6379/0"}, "local"},
		{map[string]string{"DATABASE_URL": "sqlite://:memory:"}, "local"},
		{map[string]string{"PROFILE_CACHE": "off"}, "off"},
		{map[string]string{"PROFILE_CACHE": "OFF"}, "off"},
		{map[string]string{"DATABASE_URL": "postgres://db.invalid/x"}, "off"},
		{map[string]string{"DATABASE_URL": "postgres://db.invalid/x", "REDIS_URL": "redis://127.0.0.1:6379/0"}, "off"},
		{map[string]string{"DATABASE_URL": "memory://"}, "off"},
	} {
		cfg, err := load(c.env)
		if err != nil {
			t.Fatalf("Load(%v): %v", c.env, err)
		}
		want := config.ProfileCache{Kind: c.want, TTL: time.Minute}
		if cfg.ProfileCache != want {
			t.Errorf("Load(%v).ProfileCache = %+v, want %+v", c.env, cfg.ProfileCache, want)
		}
	}
}

func TestLoadReadsProfileCache(t *testing.T) {
	cfg, err := load(map[string]string{
		"REDIS_URL": "redis://127.0.0.1:6379/0", "PROFILE_CACHE": "redis", "PROFILE_CACHE_TTL": "30s",
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.ProfileCache{Kind: config.ProfileCacheRedis, TTL: 30 * time.Second}
	if cfg.ProfileCache != want {
		t.Fatalf("ProfileCache = %+v, want %+v", cfg.ProfileCache, want)
	}
}

func TestLoadRefusesBadProfileCache(t *testing.T) {
	_, err := load(map[string]string{"PROFILE_CACHE": "redis"})
	wantRefusal(t, err, "PROFILE_CACHE", "redis needs REDIS_URL")
	_, err = load(map[string]string{"DATABASE_URL": "postgres://db.invalid/x", "PROFILE_CACHE": "local"})
	wantRefusal(t, err, "PROFILE_CACHE", "local needs a SQLite DATABASE_URL")
	_, err = load(map[string]string{"DATABASE_URL": "memory://", "PROFILE_CACHE": "local"})
	wantRefusal(t, err, "PROFILE_CACHE", "local needs a SQLite DATABASE_URL")
	cfg, err := load(map[string]string{"PROFILE_CACHE": "local"})
	if err != nil || cfg.ProfileCache.Kind != config.ProfileCacheLocal {
		t.Fatalf("PROFILE_CACHE=local on the SQLite default: %+v, %v", cfg.ProfileCache, err)
	}
	_, err = load(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "PROFILE_CACHE": "memcached"})
	wantRefusal(t, err, "PROFILE_CACHE", "memcached")
	_, err = load(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "PROFILE_CACHE": "redis", "PROFILE_CACHE_TTL": "0s"})
	wantRefusal(t, err, "PROFILE_CACHE_TTL", "0s")
}
