package config_test

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/config"
)

func TestProfileCacheIsOffByDefault(t *testing.T) {
	cfg, err := load(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.ProfileCache{Kind: "off", TTL: time.Minute}
	if cfg.ProfileCache != want {
		t.Fatalf("ProfileCache = %+v, want %+v", cfg.ProfileCache, want)
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
	cfg, err := load(map[string]string{"PROFILE_CACHE": "local"})
	if err != nil || cfg.ProfileCache.Kind != config.ProfileCacheLocal {
		t.Fatalf("PROFILE_CACHE=local on the SQLite default: %+v, %v", cfg.ProfileCache, err)
	}
	_, err = load(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "PROFILE_CACHE": "memcached"})
	wantRefusal(t, err, "PROFILE_CACHE", "memcached")
	_, err = load(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "PROFILE_CACHE": "redis", "PROFILE_CACHE_TTL": "0s"})
	wantRefusal(t, err, "PROFILE_CACHE_TTL", "0s")
}
