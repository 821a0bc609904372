package config_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/config"
)

func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATA_DIR": dir}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	jwt, key := readKey(t, filepath.Join(dir, "jwt_secret")), readKey(t, filepath.Join(dir, "secret_key"))
	want := config.Config{
		HTTPAddr:             ":8080",
		DataDir:              dir,
		Database:             config.Database{Kind: config.DatabaseSQLite, Path: filepath.Join(dir, "profilesvc.db")},
		RedisKeyPrefix:       "profilesvc:",
		JWTSecret:            []byte(jwt),
		SecretKey:            []byte(key),
		MailTransport:        "log",
		BrowserRuntime:       "auto",
		SessionTTLDefault:    time.Hour,
		SessionTTLMax:        24 * time.Hour,
		WebhookRetrySchedule: []time.Duration{0, 5 * time.Second, 25 * time.Second, 125 * time.Second},
		WebhookTimeout:       5 * time.Second,
		WebhookRetention:     168 * time.Hour,
		WebhookDelivery:      true,
		LogLevel:             "info",
		LogFormat:            "json",
		ShutdownTimeout:      25 * time.Second,

		IdempotencyKeysPerTeam:      10_000,
		IdempotencyMaxResponseBytes: 65_536,

		HTTPReadHeaderTimeout: 10 * time.Second,
		HTTPReadTimeout:       30 * time.Second,
		HTTPIdleTimeout:       time.Minute,

		APIKeysPerUser:       20,
		RegistrationsPerAddr: 20,
		Quotas: config.Quotas{WebhookEndpoints: 20, Profiles: 1000, InvitationsPerDay: 50, InvitationResendsPerDay: 3,
			Proxies: 500, ProxyChecksPerMinute: 30},
		ProfileCache: config.ProfileCache{Kind: "local", TTL: time.Minute},

		RedisTimeout:         250 * time.Millisecond,
		RedisRetryInterval:   time.Second,
		DatabaseQueryTimeout: 5 * time.Second,
		RateLimit:            config.RateLimit{Requests: 600, Window: time.Minute},
		AuthRateLimit:        config.RateLimit{Requests: 60, Window: time.Minute},

		// proxy checks
		ProxyCheckURL:     "https://ipinfo.io/json",
		ProxyCheckTimeout: 10 * time.Second,

		Blob:                     config.Blob{Kind: config.BlobFiles, Dir: filepath.Join(dir, "blobs")},
		ProfileDataMax:           512 << 20,
		ProfileDataUploadTimeout: time.Hour,
		SnapshotsPerProfile:      20,
		Browser:                  config.Browser{Max: 4, ClientsPerSession: 16, RelayConnections: 512, CookieCheckpoint: time.Minute},
		Fleet:                    config.Fleet{Heartbeat: 5 * time.Second, Timeout: 30 * time.Second, DrainTimeout: 15 * time.Second},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Load with nothing set =\n%+v\nwant\n%+v", cfg, want)
	}
	if jwt == key {
		t.Fatal("JWT_SECRET and SECRET_KEY were generated alike")
	}
	again, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if string(again.JWTSecret) != jwt || string(again.SecretKey) != key {
		t.Fatal("a second start on the same DATA_DIR generated other keys")
	}
}

// readKey returns the key kept in path and checks that only its owner may
// read it and that it is as long as Load makes them.
func readKey(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("generated key: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s has mode %o, want 600", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k := strings.TrimSuffix(string(b), "\n")
	if len(k) != 64 {
		t.Fatalf("%s holds %d characters, want 64 (32 random bytes in hex)", path, len(k))
	}
	return k
}

func TestLoadReadsEveryVariable(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		got  func(config.Config) any
		want any
	}{
		{map[string]string{"HTTP_ADDR": "127.0.0.1:9000"}, func(c config.Config) any { return c.HTTPAddr }, "127.0.0.1:9000"},
		{map[string]string{"HTTP_ADDR": " :0 "}, func(c config.Config) any { return c.HTTPAddr }, ":0"},
		{map[string]string{"DATA_DIR": "/srv/profilesvc"}, func(c config.Config) any { return c.DataDir }, "/srv/profilesvc"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0"}, func(c config.Config) any { return c.RedisURL }, "redis://127.0.0.1:6379/0"},
		{map[string]string{"REDIS_KEY_PREFIX": "eu-1:profilesvc:"}, func(c config.Config) any { return c.RedisKeyPrefix }, "eu-1:profilesvc:"},
		{map[string]string{"REDIS_URL": "rediss://:pw@cache:6380"}, func(c config.Config) any { return c.RedisURL }, "rediss://:pw@cache:6380"},
		{map[string]string{"JWT_SECRET": "j" + strings.Repeat("x", 31)}, func(c config.Config) any { return string(c.JWTSecret) }, "j" + strings.Repeat("x", 31)},
		{map[string]string{"SECRET_KEY": "k" + strings.Repeat("y", 40)}, func(c config.Config) any { return string(c.SecretKey) }, "k" + strings.Repeat("y", 40)},
		{map[string]string{"MAIL_TRANSPORT": "LOG"}, func(c config.Config) any { return c.MailTransport }, "log"},
		{map[string]string{"MAIL_TRANSPORT": "smtp", "SMTP_URL": "smtp://mail.example.com"}, func(c config.Config) any { return c.MailTransport }, "smtp"},
		{map[string]string{"BROWSER_RUNTIME": "chromium"}, func(c config.Config) any { return c.BrowserRuntime }, "chromium"},
		{map[string]string{"BROWSER_RUNTIME": "None"}, func(c config.Config) any { return c.BrowserRuntime }, "none"},
		{map[string]string{"SESSION_TTL_DEFAULT": "30m"}, func(c config.Config) any { return c.SessionTTLDefault }, 30 * time.Minute},
		{map[string]string{"SESSION_TTL_MAX": "48h"}, func(c config.Config) any { return c.SessionTTLMax }, 48 * time.Hour},
		{map[string]string{"SESSION_TTL_DEFAULT": "2h", "SESSION_TTL_MAX": "2h"}, func(c config.Config) any { return c.SessionTTLDefault }, 2 * time.Hour},
		{map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s, 1m"}, func(c config.Config) any { return c.WebhookRetrySchedule }, []time.Duration{time.Second, time.Minute}},
		{map[string]string{"WEBHOOK_RETRY_SCHEDULE": "0s"}, func(c config.Config) any { return c.WebhookRetrySchedule }, []time.Duration{0}},
		{map[string]string{"WEBHOOK_TIMEOUT": "1500ms"}, func(c config.Config) any { return c.WebhookTimeout }, 1500 * time.Millisecond},
		{map[string]string{"WEBHOOK_RETENTION": "36h"}, func(c config.Config) any { return c.WebhookRetention }, 36 * time.Hour},
		{map[string]string{"TRUSTED_PROXIES": " 127.1.2.3, 127.16.9.9/12 ,::1,::1/64"}, func(c config.Config) any { return c.TrustedProxies },
			[]netip.Prefix{netip.MustParsePrefix("127.1.2.3/32"), netip.MustParsePrefix("127.16.0.0/12"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("::/64")}},
		{map[string]string{"AUTH_RATE_LIMIT": "5/1h"}, func(c config.Config) any { return c.AuthRateLimit }, config.RateLimit{Requests: 5, Window: time.Hour}},
		{map[string]string{"AUTH_RATE_LIMIT": "off"}, func(c config.Config) any { return c.AuthRateLimit.On() }, false},
		{map[string]string{"CORS_ORIGINS": " https://App.Example.com , http://127.0.0.1:3000,https://app.example.com"}, func(c config.Config) any { return c.CORSOrigins },
			[]string{"https://app.example.com", "http://127.0.0.1:3000"}},
		{map[string]string{"CORS_ORIGINS": "https://" + strings.Repeat("a", 2040)}, func(c config.Config) any { return len(c.CORSOrigins[0]) }, 2048},
		{map[string]string{"CORS_ORIGINS": "*"}, func(c config.Config) any { return c.CORSOrigins }, []string{"*"}},
		{map[string]string{"WEBHOOK_DELIVERY": "off"}, func(c config.Config) any { return c.WebhookDelivery }, false},
		{map[string]string{"WEBHOOK_DELIVERY": "On"}, func(c config.Config) any { return c.WebhookDelivery }, true},
		{map[string]string{"ALLOW_PRIVATE_TARGETS": "true"}, func(c config.Config) any { return c.AllowPrivateTargets }, true},
		{map[string]string{"ALLOW_PRIVATE_TARGETS": "1"}, func(c config.Config) any { return c.AllowPrivateTargets }, true},
		{map[string]string{"ALLOW_PRIVATE_TARGETS": "false"}, func(c config.Config) any { return c.AllowPrivateTargets }, false},
		{map[string]string{"LOG_LEVEL": "debug"}, func(c config.Config) any { return c.LogLevel }, "debug"},
		{map[string]string{"LOG_LEVEL": "WARN"}, func(c config.Config) any { return c.LogLevel }, "warn"},
		{map[string]string{"LOG_LEVEL": "error"}, func(c config.Config) any { return c.LogLevel }, "error"},
		{map[string]string{"LOG_LEVEL": "   "}, func(c config.Config) any { return c.LogLevel }, "info"},
		{map[string]string{"LOG_FORMAT": "console"}, func(c config.Config) any { return c.LogFormat }, "console"},
		{map[string]string{"SHUTDOWN_TIMEOUT": "1m"}, func(c config.Config) any { return c.ShutdownTimeout }, time.Minute},
		{map[string]string{"IDEMPOTENCY_KEYS_PER_TEAM": "500"}, func(c config.Config) any { return c.IdempotencyKeysPerTeam }, 500},
		{map[string]string{"IDEMPOTENCY_MAX_RESPONSE_BYTES": " 1024 "}, func(c config.Config) any { return c.IdempotencyMaxResponseBytes }, 1024},
		{map[string]string{"HTTP_READ_HEADER_TIMEOUT": "3s"}, func(c config.Config) any { return c.HTTPReadHeaderTimeout }, 3 * time.Second},
		{map[string]string{"HTTP_READ_TIMEOUT": "750ms"}, func(c config.Config) any { return c.HTTPReadTimeout }, 750 * time.Millisecond},
		{map[string]string{"HTTP_IDLE_TIMEOUT": "5m"}, func(c config.Config) any { return c.HTTPIdleTimeout }, 5 * time.Minute},
		{map[string]string{"PROFILE_DATA_UPLOAD_TIMEOUT": "10m"}, func(c config.Config) any { return c.ProfileDataUploadTimeout }, 10 * time.Minute},
		{map[string]string{"SNAPSHOTS_PER_PROFILE": "3"}, func(c config.Config) any { return c.SnapshotsPerProfile }, 3},
		{map[string]string{"BROWSERS_MAX": "2"}, func(c config.Config) any { return c.Browser.Max }, 2},
		{map[string]string{"CHROMIUM_PATH": "/opt/chromium/chrome"}, func(c config.Config) any { return c.Browser.ChromiumPath }, "/opt/chromium/chrome"},
		{map[string]string{"PUBLIC_URL": "https://profiles.example.com/"}, func(c config.Config) any { return c.Browser.PublicURL }, "https://profiles.example.com"},
		{map[string]string{"NODE_URL": "http://node-1.internal.test:8080"}, func(c config.Config) any { return c.Browser.NodeURL }, "http://node-1.internal.test:8080"},
		{map[string]string{"API_KEYS_PER_USER": "5"}, func(c config.Config) any { return c.APIKeysPerUser }, 5},
		{map[string]string{"REGISTRATIONS_PER_ADDR": "100"}, func(c config.Config) any { return c.RegistrationsPerAddr }, 100},

		{map[string]string{"REDIS_TIMEOUT": "100ms"}, func(c config.Config) any { return c.RedisTimeout }, 100 * time.Millisecond},
		{map[string]string{"REDIS_RETRY_INTERVAL": "5s"}, func(c config.Config) any { return c.RedisRetryInterval }, 5 * time.Second},
		{map[string]string{"DATABASE_QUERY_TIMEOUT": "2s"}, func(c config.Config) any { return c.DatabaseQueryTimeout }, 2 * time.Second},
		{map[string]string{"RATE_LIMIT": "10/1s"}, func(c config.Config) any { return c.RateLimit }, config.RateLimit{Requests: 10, Window: time.Second}},
		{map[string]string{"RATE_LIMIT": " 1000 / 1h "}, func(c config.Config) any { return c.RateLimit }, config.RateLimit{Requests: 1000, Window: time.Hour}},
		{map[string]string{"RATE_LIMIT": "OFF"}, func(c config.Config) any { return c.RateLimit.On() }, false},
	} {
		cfg, err := load(c.env)
		if err != nil {
			t.Errorf("Load(%v): %v", c.env, err)
			continue
		}
		if got := c.got(cfg); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Load(%v): got %v, want %v", c.env, got, c.want)
		}
	}
}

func TestLoadRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		variable, value, problem string
	}{
		{"HTTP_ADDR", "8080", `"8080" is not host:port`},
		{"REDIS_URL", "http://cache:6379", "is not a redis:// or rediss:// URL"},
		{"REDIS_URL", "redis://:hunter2@[::1", "is not a redis:// or rediss:// URL"},
		{"REDIS_KEY_PREFIX", "team*", "must be 1 to 64 characters without spaces or the pattern characters * ? [ ] \\"},
		{"REDIS_KEY_PREFIX", "team a:", "must be 1 to 64 characters without spaces or the pattern characters * ? [ ] \\"},
		{"REDIS_KEY_PREFIX", strings.Repeat("k", 65), "must be 1 to 64 characters without spaces or the pattern characters * ? [ ] \\"},
		{"MAIL_TRANSPORT", "sendmail", `"sendmail" is not one of log, smtp`},
		{"BROWSER_RUNTIME", "firefox", `"firefox" is not one of auto, chromium, none`},
		{"BROWSERS_MAX", "0", "BROWSERS_MAX"},
		{"PUBLIC_URL", "profiles.example.com", "is not an http or https base URL"},
		{"NODE_URL", "http://node.test:8080/?x=1", "is not an http or https base URL"},
		{"SESSION_TTL_DEFAULT", "forever", `"forever" is not a positive duration`},
		{"SESSION_TTL_DEFAULT", "0s", `"0s" is not a positive duration`},
		{"SESSION_TTL_DEFAULT", "25h", "is longer than SESSION_TTL_MAX"},
		{"SESSION_TTL_MAX", "-1h", `"-1h" is not a positive duration`},
		{"WEBHOOK_RETRY_SCHEDULE", "0s,soon", `"0s,soon" is not a comma-separated list of durations`},
		{"WEBHOOK_RETRY_SCHEDULE", "5s,-1s", `"5s,-1s" is not a comma-separated list of durations`},
		{"WEBHOOK_RETRY_SCHEDULE", "5s,", `"5s," is not a comma-separated list of durations`},
		{"WEBHOOK_TIMEOUT", "5", `"5" is not a positive duration`},
		{"WEBHOOK_RETENTION", "-1h", `"-1h" is not a positive duration`},
		{"WEBHOOK_DELIVERY", "false", `"false" is not one of on, off`},
		{"API_KEYS_PER_USER", "0", `"0" is not a whole number of at least 1`},
		{"REGISTRATIONS_PER_ADDR", "many", `"many" is not a whole number of at least 1`},
		{"TRUSTED_PROXIES", "127.0.0.1,proxy.internal", `"proxy.internal" is not an IP address or CIDR prefix`},
		{"TRUSTED_PROXIES", "127.0.0.0/33", `"127.0.0.0/33" is not an IP address or CIDR prefix`},
		{"AUTH_RATE_LIMIT", "60", `"60" is not requests/window such as 600/1m (a whole number of seconds), or off`},
		{"CORS_ORIGINS", "https://app.example.com/", `"https://app.example.com/" is not an origin such as https://app.example.com or *`},
		{"CORS_ORIGINS", "app.example.com", `"app.example.com" is not an origin such as https://app.example.com or *`},
		{"CORS_ORIGINS", "ftp://app.example.com", `"ftp://app.example.com" is not an origin such as https://app.example.com or *`},
		{"CORS_ORIGINS", "https://user@app.example.com", `"https://user@app.example.com" is not an origin such as https://app.example.com or *`},
		{"CORS_ORIGINS", "https://" + strings.Repeat("a", 2041), `"https://` + strings.Repeat("a", 2041) + `" is not an origin such as https://app.example.com or *`},
		{"PUBLIC_URL", "https://" + strings.Repeat("a", 2041), `"https://` + strings.Repeat("a", 2041) + `" is not an http or https base URL such as https://profiles.example.com`},
		{"CORS_ORIGINS", "*,https://app.example.com", `"*" allows every origin and cannot be listed with others`},
		{"ALLOW_PRIVATE_TARGETS", "yes", `"yes" is not true or false`},
		{"LOG_LEVEL", "loud", `"loud" is not one of debug, info, warn, error`},
		{"LOG_FORMAT", "xml", `"xml" is not one of json, console`},
		{"SHUTDOWN_TIMEOUT", "0", `"0" is not a positive duration`},
		{"IDEMPOTENCY_KEYS_PER_TEAM", "0", `"0" is not a whole number of at least 1`},
		{"IDEMPOTENCY_KEYS_PER_TEAM", "many", `"many" is not a whole number of at least 1`},
		{"IDEMPOTENCY_MAX_RESPONSE_BYTES", "64KiB", `"64KiB" is not a whole number of at least 1`},
		{"HTTP_READ_TIMEOUT", "soon", `"soon" is not a positive duration`},
		{"REDIS_TIMEOUT", "0s", `"0s" is not a positive duration`},
		{"REDIS_RETRY_INTERVAL", "often", `"often" is not a positive duration`},
		{"DATABASE_QUERY_TIMEOUT", "-5s", `"-5s" is not a positive duration`},
		{"RATE_LIMIT", "600", `"600" is not requests/window`},
		{"RATE_LIMIT", "0/1m", `"0/1m" is not requests/window`},
		{"RATE_LIMIT", "10/1500ms", `"10/1500ms" is not requests/window`},
		{"RATE_LIMIT", "ten/1m", `"ten/1m" is not requests/window`},
		{"JWT_SECRET", "short", "must be at least 32 characters"},
		{"SECRET_KEY", strings.Repeat("k", 31), "must be at least 32 characters"},
	} {
		t.Run(c.variable+"="+c.value, func(t *testing.T) {
			_, err := load(map[string]string{c.variable: c.value})
			wantRefusal(t, err, c.variable, c.problem, "hunter2")
		})
	}
}

// A maximum below the default lease is a bad pair, reported on the default,
// the value that no longer fits.
func TestLoadRefusesAMaximumBelowTheDefaultLease(t *testing.T) {
	_, err := load(map[string]string{"SESSION_TTL_MAX": "30m"})
	wantRefusal(t, err, "SESSION_TTL_DEFAULT", "is longer than SESSION_TTL_MAX")
}

func TestLoadReadsKeysKeptInDataDir(t *testing.T) {
	dir := t.TempDir()
	jwt, key := strings.Repeat("j", 40), strings.Repeat("s", 40)
	writeFile(t, filepath.Join(dir, "jwt_secret"), jwt+"\n")
	writeFile(t, filepath.Join(dir, "secret_key"), "  "+key+"\n\n")
	env := map[string]string{"DATA_DIR": dir}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if string(cfg.JWTSecret) != jwt || string(cfg.SecretKey) != key {
		t.Fatalf("keys = %q, %q; want the ones kept in DATA_DIR", cfg.JWTSecret, cfg.SecretKey)
	}
	// A variable that is set wins over the kept key.
	env["JWT_SECRET"] = strings.Repeat("v", 32)
	if cfg, err = config.Load(func(k string) string { return env[k] }); err != nil || string(cfg.JWTSecret) != env["JWT_SECRET"] {
		t.Fatalf("JWTSecret = %q, %v; want JWT_SECRET's value", cfg.JWTSecret, err)
	}
}

func TestLoadRefusesUnusableKeptKeys(t *testing.T) {
	t.Run("too short", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "jwt_secret"), "short\n")
		env := map[string]string{"DATA_DIR": dir}
		_, err := config.Load(func(k string) string { return env[k] })
		wantRefusal(t, err, "JWT_SECRET", "unset, and the key kept in "+filepath.Join(dir, "jwt_secret")+" is too short")
	})
	t.Run("unreadable", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "secret_key"), 0o700); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"DATA_DIR": dir, "JWT_SECRET": jwtSecret}
		_, err := config.Load(func(k string) string { return env[k] })
		wantRefusal(t, err, "SECRET_KEY", "unset, and "+filepath.Join(dir, "secret_key")+" cannot be read")
	})
	t.Run("DATA_DIR is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "data")
		writeFile(t, file, "")
		env := map[string]string{"DATA_DIR": file}
		_, err := config.Load(func(k string) string { return env[k] })
		wantRefusal(t, err, "JWT_SECRET", "cannot be read")
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// proxy checks

func TestLoadProxyChecks(t *testing.T) {
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ProxyCheckURL != "https://ipinfo.io/json" || c.ProxyCheckTimeout != 10*time.Second {
		t.Fatalf("defaults: %q %s, want https://ipinfo.io/json 10s", c.ProxyCheckURL, c.ProxyCheckTimeout)
	}
	c, err = load(map[string]string{"PROXY_CHECK_URL": "http://127.0.0.1:9000/json", "PROXY_CHECK_TIMEOUT": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ProxyCheckURL != "http://127.0.0.1:9000/json" || c.ProxyCheckTimeout != 3*time.Second {
		t.Fatalf("read: %q %s", c.ProxyCheckURL, c.ProxyCheckTimeout)
	}
	for _, bad := range []struct{ variable, value, problem string }{
		{"PROXY_CHECK_URL", "ipinfo.io/json", `"ipinfo.io/json" is not an absolute http or https URL`},
		{"PROXY_CHECK_URL", "ftp://example.com/ip", `"ftp://example.com/ip" is not an absolute http or https URL`},
		{"PROXY_CHECK_URL", "https:///json", `"https:///json" is not an absolute http or https URL`},
		{"PROXY_CHECK_TIMEOUT", "0s", `"0s" is not a positive duration`},
		{"PROXY_CHECK_TIMEOUT", "ten", `"ten" is not a positive duration`},
	} {
		_, err := load(map[string]string{bad.variable: bad.value})
		wantRefusal(t, err, bad.variable, bad.problem, "hunter2")
	}
}
