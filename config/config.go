// Package config owns the service's configuration: every variable of the
// "Running" table, read from the environment in one place, with defaults and
// validation. A bad value names its variable and stops the service at start.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of one process.
type Config struct {
	HTTPAddr string
	DataDir  string
	Database Database
	RedisURL string
	// RedisKeyPrefix starts every key the service writes to Redis, so that
	// several deployments (or test runs) can share one Redis database.
	RedisKeyPrefix string
	JWTSecret      []byte
	SecretKey      []byte
	MailTransport  string
	// SMTP is set when MailTransport is "smtp".
	SMTP                 SMTP
	BrowserRuntime       string
	Browser              Browser
	Fleet                Fleet
	SessionTTLDefault    time.Duration
	SessionTTLMax        time.Duration
	WebhookRetrySchedule []time.Duration
	WebhookTimeout       time.Duration
	WebhookRetention     time.Duration
	// WebhookDelivery is WEBHOOK_DELIVERY: when false ("off") the instance
	// serves the API and writes events to the outbox, but leaves fanning
	// them out, attempting deliveries and pruning to the instances with it
	// on that share its database.
	WebhookDelivery     bool
	AllowPrivateTargets bool
	LogLevel            string
	LogFormat           string
	// ShutdownTimeout bounds how long in-flight requests may run after SIGTERM.
	ShutdownTimeout time.Duration
	// IdempotencyKeysPerTeam bounds the Idempotency-Key records a team holds
	// (24 h each); IdempotencyMaxResponseBytes is the largest response kept
	// for replays.
	IdempotencyKeysPerTeam      int
	IdempotencyMaxResponseBytes int

	// HTTPReadHeaderTimeout bounds reading a request's headers,
	// HTTPReadTimeout the whole request, body included, from its first
	// byte, whether or not a handler reads the body; HTTPIdleTimeout how
	// long a kept-alive connection waits for its next request.
	HTTPReadHeaderTimeout time.Duration
	HTTPReadTimeout       time.Duration
	HTTPIdleTimeout       time.Duration

	// APIKeysPerUser bounds the API keys one user holds in one team.
	APIKeysPerUser int
	// RegistrationsPerAddr bounds registrations per client address per hour.
	RegistrationsPerAddr int
	// TrustedProxies is TRUSTED_PROXIES: the addresses (IPs or CIDR
	// prefixes) of the proxies whose X-Forwarded-For names the client.
	// Empty, the header is ignored: any client could set it.
	TrustedProxies []netip.Prefix
	// Quotas bound each team's share of the service.
	Quotas Quotas
	// ProfileCache is PROFILE_CACHE and PROFILE_CACHE_TTL.
	ProfileCache ProfileCache

	// RedisTimeout bounds dialing Redis, each read and write, and the wait
	// for a pooled connection, unless REDIS_URL sets one of them itself.
	RedisTimeout time.Duration
	// RedisRetryInterval is how often Redis is tried again while it does
	// not answer; meanwhile the cache is bypassed and rate limits are
	// counted in process.
	RedisRetryInterval time.Duration
	// DatabaseQueryTimeout bounds each PostgreSQL statement (the wait for a
	// pooled connection included) and each transaction.
	DatabaseQueryTimeout time.Duration
	// RateLimit bounds the requests of each API key and of each user.
	RateLimit RateLimit
	// AuthRateLimit is AUTH_RATE_LIMIT: it bounds the requests of each
	// client address to the account endpoints that need no credentials
	// (/api/v1/auth/*).
	AuthRateLimit RateLimit
	// CORSOrigins is CORS_ORIGINS: the origins whose scripts may call the
	// API from a browser ("*" for any). Empty, the default, CORS is off.
	CORSOrigins []string

	// proxy checks: ProxyCheckURL is the IP echo service a proxy test or
	// check reaches through the proxy (the operator's, trusted);
	// ProxyCheckTimeout bounds one whole test, from dialling the proxy to
	// the echo's answer.
	ProxyCheckURL     string
	ProxyCheckTimeout time.Duration

	// Blob says where browser data are kept (BLOB_URL); ProfileDataMax is
	// the largest browser data archive accepted, in bytes.
	Blob           Blob
	ProfileDataMax int64
	// ProfileDataUploadTimeout bounds one browser data upload, from its
	// first byte to the data being stored (PROFILE_DATA_UPLOAD_TIMEOUT).
	ProfileDataUploadTimeout time.Duration
	// SnapshotsPerProfile is how many snapshots a profile keeps; the oldest
	// are pruned beyond it.
	SnapshotsPerProfile int
}

// Error names the variable whose value is unusable.
type Error struct {
	Variable string
	Problem  string
}

func (e *Error) Error() string { return e.Variable + ": " + e.Problem }

// minSecretLength is the shortest JWT_SECRET or SECRET_KEY accepted: shorter
// keys make HMAC signatures guessable.
const minSecretLength = 32

// Load reads every variable through getenv, applies defaults and validates.
// When JWT_SECRET or SECRET_KEY is unset, a random one is generated once and
// kept in DATA_DIR so that tokens and encrypted secrets survive restarts.
func Load(getenv func(string) string) (Config, error) {
	l := loader{getenv: getenv}
	c := l.load()
	if l.err != nil {
		return Config{}, l.err
	}
	var err error
	if c.JWTSecret, err = secret(getenv, "JWT_SECRET", c.DataDir, "jwt_secret"); err != nil {
		return Config{}, err
	}
	if c.SecretKey, err = secret(getenv, "SECRET_KEY", c.DataDir, "secret_key"); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Variable is a variable Load reads, with its default as help shows it.
type Variable struct{ Name, Default string }

// Variables lists every variable Load reads, in the order it reads them,
// with its default: what `profilesvc help config` prints.
func Variables() []Variable {
	l := loader{getenv: func(string) string { return "" }}
	l.load()
	return l.vars
}

// load reads and checks every variable but the two secrets.
func (l *loader) load() Config {
	c := Config{
		HTTPAddr:            l.str("HTTP_ADDR", ":8080"),
		DataDir:             l.str("DATA_DIR", "./data"),
		RedisURL:            l.str("REDIS_URL", ""),
		RedisKeyPrefix:      l.str("REDIS_KEY_PREFIX", "profilesvc:"),
		RedisTimeout:        l.duration("REDIS_TIMEOUT", 250*time.Millisecond),
		RedisRetryInterval:  l.duration("REDIS_RETRY_INTERVAL", time.Second),
		MailTransport:       l.oneOf("MAIL_TRANSPORT", "log", "log", "smtp"),
		BrowserRuntime:      l.browserRuntime(runtime.GOOS),
		SessionTTLDefault:   l.duration("SESSION_TTL_DEFAULT", time.Hour),
		SessionTTLMax:       l.duration("SESSION_TTL_MAX", 24*time.Hour),
		WebhookTimeout:      l.duration("WEBHOOK_TIMEOUT", 5*time.Second),
		WebhookRetention:    l.duration("WEBHOOK_RETENTION", 7*24*time.Hour),
		AllowPrivateTargets: l.boolean("ALLOW_PRIVATE_TARGETS", false),
		LogLevel:            l.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		LogFormat:           l.oneOf("LOG_FORMAT", "json", "json", "console"),
		ShutdownTimeout:     l.duration("SHUTDOWN_TIMEOUT", 25*time.Second),
	}
	c.APIKeysPerUser = l.atLeastOne("API_KEYS_PER_USER", 20)
	c.RegistrationsPerAddr = l.atLeastOne("REGISTRATIONS_PER_ADDR", 20)
	c.TrustedProxies = l.prefixes("TRUSTED_PROXIES")
	c.Database = l.database("DATABASE_URL", Database{Kind: DatabaseSQLite, Path: filepath.Join(c.DataDir, "profilesvc.db")})
	c.DatabaseQueryTimeout = l.duration("DATABASE_QUERY_TIMEOUT", 5*time.Second)
	c.RateLimit = l.rateLimit("RATE_LIMIT", "600/1m")
	c.AuthRateLimit = l.rateLimit("AUTH_RATE_LIMIT", "60/1m")
	c.CORSOrigins = l.origins("CORS_ORIGINS")
	l.note("SMTP_URL", "none; required with MAIL_TRANSPORT=smtp")
	if c.MailTransport == "smtp" {
		c.SMTP = l.smtp("SMTP_URL")
	}
	c.WebhookRetrySchedule = l.schedule("WEBHOOK_RETRY_SCHEDULE", "0s,5s,25s,125s")
	c.WebhookDelivery = l.oneOf("WEBHOOK_DELIVERY", "on", "on", "off") == "on"
	c.IdempotencyKeysPerTeam = l.atLeastOne("IDEMPOTENCY_KEYS_PER_TEAM", 10_000)
	c.IdempotencyMaxResponseBytes = l.atLeastOne("IDEMPOTENCY_MAX_RESPONSE_BYTES", 64<<10)
	c.HTTPReadHeaderTimeout = l.duration("HTTP_READ_HEADER_TIMEOUT", 10*time.Second)
	c.HTTPReadTimeout = l.duration("HTTP_READ_TIMEOUT", 30*time.Second)
	c.HTTPIdleTimeout = l.duration("HTTP_IDLE_TIMEOUT", 60*time.Second)
	c.Quotas = l.quotas()
	c.ProfileCache = l.profileCache(c.RedisURL, c.Database)
	// proxy checks
	c.ProxyCheckURL = l.httpURL("PROXY_CHECK_URL", "https://ipinfo.io/json")
	c.ProxyCheckTimeout = l.duration("PROXY_CHECK_TIMEOUT", 10*time.Second)
	c.Blob = l.blob("BLOB_URL", c.DataDir, c.Database)
	c.ProfileDataMax = l.size("PROFILE_DATA_MAX", 512<<20)
	c.ProfileDataUploadTimeout = l.duration("PROFILE_DATA_UPLOAD_TIMEOUT", time.Hour)
	c.SnapshotsPerProfile = l.atLeastOne("SNAPSHOTS_PER_PROFILE", 20)
	c.Browser = l.browser()
	c.Fleet = l.fleet()
	l.check(c)
	// Read by Load itself, after the rest.
	l.note("JWT_SECRET", "generated once, kept in DATA_DIR/jwt_secret")
	l.note("SECRET_KEY", "generated once, kept in DATA_DIR/secret_key")
	return c
}

type loader struct {
	getenv func(string) string
	err    error
	// vars are the variables read so far, with their defaults as help
	// shows them.
	vars []Variable
}

// note records a variable and the default help shows for it.
func (l *loader) note(name, shown string) {
	if !slices.ContainsFunc(l.vars, func(v Variable) bool { return v.Name == name }) {
		l.vars = append(l.vars, Variable{Name: name, Default: shown})
	}
}

// read is a variable's value, trimmed, "" when unset; shown is its default
// as help shows it.
func (l *loader) read(name, shown string) string {
	l.note(name, shown)
	return strings.TrimSpace(l.getenv(name))
}

func (l *loader) fail(name, problem string) {
	if l.err == nil {
		l.err = &Error{Variable: name, Problem: problem}
	}
}

func (l *loader) str(name, def string) string {
	if v := l.read(name, def); v != "" {
		return v
	}
	return def
}

func (l *loader) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(l.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	l.fail(name, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", ")))
	return def
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v := l.read(name, def.String())
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.fail(name, fmt.Sprintf("%q is not a positive duration such as 30s or 1h", v))
		return def
	}
	return d
}

// httpURL reads an absolute http or https URL with a host.
func (l *loader) httpURL(name, def string) string {
	v := l.str(name, def)
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.fail(name, fmt.Sprintf("%q is not an absolute http or https URL", v))
		return def
	}
	return v
}

func (l *loader) atLeastOne(name string, def int) int {
	v := l.read(name, strconv.Itoa(def))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		l.fail(name, fmt.Sprintf("%q is not a whole number of at least 1", v))
		return def
	}
	return n
}

func (l *loader) boolean(name string, def bool) bool {
	v := l.read(name, strconv.FormatBool(def))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		l.fail(name, fmt.Sprintf("%q is not true or false", v))
		return def
	}
	return b
}

func (l *loader) database(name string, def Database) Database {
	v := l.read(name, "sqlite://"+def.Path)
	if v == "" {
		return def
	}
	d, problem := parseDatabase(v)
	if problem != "" {
		l.fail(name, problem)
		return def
	}
	return d
}

func (l *loader) smtp(name string) SMTP {
	v := l.str(name, "")
	if v == "" {
		l.fail(name, "is required when MAIL_TRANSPORT=smtp: smtp://user:pass@host:port or smtps://user:pass@host:port")
		return SMTP{}
	}
	s, problem := parseSMTP(v)
	if problem != "" {
		l.fail(name, problem)
	}
	return s
}

func (l *loader) schedule(name, def string) []time.Duration {
	v := l.str(name, def)
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < 0 {
			l.fail(name, fmt.Sprintf("%q is not a comma-separated list of durations such as 0s,5s,25s,125s", v))
			return nil
		}
		out = append(out, d)
	}
	return out
}

// prefixes reads a comma-separated list of IP addresses and CIDR prefixes;
// an address is the prefix of itself alone.
func (l *loader) prefixes(name string) []netip.Prefix {
	v := l.str(name, "")
	var out []netip.Prefix
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil {
				l.fail(name, fmt.Sprintf("%q is not an IP address or CIDR prefix", part))
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

// origins reads a comma-separated list of origins as browsers send them in
// Origin (scheme://host[:port], nothing after it), or "*" alone.
func (l *loader) origins(name string) []string {
	var out []string
	for _, part := range strings.Split(l.str(name, ""), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part != "*" {
			u, err := url.Parse(part)
			if err != nil || len(part) > maxURLBytes || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
				u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(part, "?") || strings.HasSuffix(part, "#") {
				l.fail(name, fmt.Sprintf("%q is not an origin such as https://app.example.com or *", part))
				continue
			}
			part = strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
		}
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	if len(out) > 1 && slices.Contains(out, "*") {
		l.fail(name, `"*" allows every origin and cannot be listed with others`)
	}
	return out
}

func (l *loader) check(c Config) {
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		l.fail("HTTP_ADDR", fmt.Sprintf("%q is not host:port", c.HTTPAddr))
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			l.fail("REDIS_URL", "is not a redis:// or rediss:// URL")
		}
	}
	if c.RedisKeyPrefix == "" || len(c.RedisKeyPrefix) > 64 || strings.ContainsAny(c.RedisKeyPrefix, "*?[]\\ \t\r\n") {
		l.fail("REDIS_KEY_PREFIX", "must be 1 to 64 characters without spaces or the pattern characters * ? [ ] \\")
	}
	if c.SessionTTLDefault > c.SessionTTLMax {
		l.fail("SESSION_TTL_DEFAULT", "is longer than SESSION_TTL_MAX")
	}
}

// secret returns the variable's value, or the key kept in DATA_DIR/file,
// generating and keeping one on first start.
func secret(getenv func(string) string, name, dataDir, file string) ([]byte, error) {
	if v := getenv(name); v != "" {
		if len(v) < minSecretLength {
			return nil, &Error{Variable: name, Problem: fmt.Sprintf("must be at least %d characters", minSecretLength)}
		}
		return []byte(v), nil
	}
	path := filepath.Join(dataDir, file)
	b, err := os.ReadFile(path)
	if err == nil {
		if v := strings.TrimSpace(string(b)); len(v) >= minSecretLength {
			return []byte(v), nil
		}
		return nil, &Error{Variable: name, Problem: fmt.Sprintf("unset, and the key kept in %s is too short", path)}
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Variable: name, Problem: fmt.Sprintf("unset, and %s cannot be read: %v", path, err)}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, &Error{Variable: "DATA_DIR", Problem: err.Error()}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	v := hex.EncodeToString(raw)
	// O_EXCL: when two instances start together on one DATA_DIR, the second
	// reads the key the first wrote instead of replacing it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return secret(getenv, name, dataDir, file)
	}
	if err != nil {
		return nil, &Error{Variable: name, Problem: fmt.Sprintf("unset, and %s cannot be written: %v", path, err)}
	}
	if _, err := f.WriteString(v + "\n"); err != nil {
		f.Close()
		return nil, &Error{Variable: name, Problem: err.Error()}
	}
	if err := f.Close(); err != nil {
		return nil, &Error{Variable: name, Problem: err.Error()}
	}
	return []byte(v), nil
}
