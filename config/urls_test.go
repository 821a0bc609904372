package config_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/config"
)

// Secrets long enough for Load, set so that Load generates and writes none.
const (
	jwtSecret = "jwt-secret-0123456789abcdef0123456789"
	secretKey = "secret-key-0123456789abcdef0123456789"
)

// load runs Load over env and the two secrets, never the process
// environment.
func load(env map[string]string) (config.Config, error) {
	full := map[string]string{"JWT_SECRET": jwtSecret, "SECRET_KEY": secretKey}
	maps.Copy(full, env)
	return config.Load(func(k string) string { return full[k] })
}

// wantRefusal fails t unless err is a *config.Error for variable whose text
// contains problem and none of hidden.
func wantRefusal(t *testing.T, err error, variable, problem string, hidden ...string) {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *config.Error for %s", err, variable)
	}
	if ce.Variable != variable || !strings.HasPrefix(err.Error(), variable+": ") {
		t.Fatalf("err = %q names %s, want %s", err, ce.Variable, variable)
	}
	if !strings.Contains(err.Error(), problem) {
		t.Fatalf("err = %q, want it to say %q", err, problem)
	}
	for _, h := range hidden {
		if strings.Contains(err.Error(), h) {
			t.Fatalf("err = %q shows %q", err, h)
		}
	}
}

func TestDatabaseURL(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want config.Database
	}{
		{map[string]string{}, config.Database{Kind: config.DatabaseSQLite, Path: "data/profilesvc.db"}},
		{map[string]string{"DATA_DIR": "/srv/profilesvc"}, config.Database{Kind: config.DatabaseSQLite, Path: "/srv/profilesvc/profilesvc.db"}},
		{map[string]string{"DATABASE_URL": "sqlite:///var/lib/p.db"}, config.Database{Kind: config.DatabaseSQLite, Path: "/var/lib/p.db"}},
		{map[string]string{"DATABASE_URL": "sqlite://./p.db"}, config.Database{Kind: config.DatabaseSQLite, Path: "./p.db"}},
		{map[string]string{"DATABASE_URL": "sqlite://:memory:"}, config.Database{Kind: config.DatabaseSQLite, Path: ":memory:"}},
		{map[string]string{"DATABASE_URL": "SQLite://p.db"}, config.Database{Kind: config.DatabaseSQLite, Path: "p.db"}},
		{map[string]string{"DATABASE_URL": " memory:// "}, config.Database{Kind: config.DatabaseMemory}},
		{
			map[string]string{"DATABASE_URL": "postgres://app:pw@db:5432/app?sslmode=disable&search_path=s1"},
			config.Database{Kind: config.DatabasePostgres, URL: "postgres://app:pw@db:5432/app?sslmode=disable&search_path=s1"},
		},
		{map[string]string{"DATABASE_URL": "postgresql://db/app"}, config.Database{Kind: config.DatabasePostgres, URL: "postgresql://db/app"}},
	} {
		cfg, err := load(c.env)
		if err != nil {
			t.Errorf("Load(%v): %v", c.env, err)
			continue
		}
		if cfg.Database != c.want {
			t.Errorf("Load(%v).Database = %+v, want %+v", c.env, cfg.Database, c.want)
		}
	}
}

func TestDatabaseURLRefusals(t *testing.T) {
	for raw, problem := range map[string]string{
		"mysql://u:hunter2@h/db":            `scheme "mysql" is not sqlite, postgres or memory`,
		"hunter2":                           "is not a URL: want sqlite://<path>",
		"u:hunter2@db/app":                  "is not a URL: want sqlite://<path>",
		"my hunter2://db":                   "is not a URL: want sqlite://<path>",
		"memory://x":                        "memory:// takes nothing after the scheme",
		"sqlite://":                         "sqlite:// needs a file path",
		"sqlite://p.db?mode=ro":             `SQLite path "p.db?mode=ro" contains ? or #`,
		"postgres://u:hunter2@/app":         "postgres:// needs a host",
		"postgres://u:hunter2@db:99999/app": `port "99999" is not a number from 1 to 65535`,
		"postgres://u:hunter2@db:5432/app?sslmode=maybe":  `sslmode "maybe" is not one of disable, allow`,
		"postgres://u:hunter2%zz@db/app":                  "is not a URL (percent-encode",
		"postgresql://u:hunter2#x@db/app":                 "is not a URL (percent-encode",
		"postgres://u:hunter2@db:5432/app?sslmode=verify": `sslmode "verify"`,
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := load(map[string]string{"DATABASE_URL": raw})
			wantRefusal(t, err, "DATABASE_URL", problem, "hunter2")
		})
	}
}

func TestParseDatabaseURL(t *testing.T) {
	d, err := config.ParseDatabaseURL("sqlite:///tmp/x.db")
	if err != nil || d != (config.Database{Kind: config.DatabaseSQLite, Path: "/tmp/x.db"}) {
		t.Fatalf("ParseDatabaseURL = %+v, %v", d, err)
	}
	_, err = config.ParseDatabaseURL("redis://u:hunter2@h")
	wantRefusal(t, err, "DATABASE_URL", `scheme "redis"`, "hunter2")
}

func TestDatabaseStringMasksThePassword(t *testing.T) {
	for _, c := range []struct {
		d    config.Database
		want string
	}{
		{config.Database{Kind: config.DatabasePostgres, URL: "postgres://app:hunter2@db:5432/app?sslmode=disable"}, "postgres://app:xxxxx@db:5432/app?sslmode=disable"},
		{config.Database{Kind: config.DatabaseSQLite, Path: "/var/lib/p.db"}, "sqlite:///var/lib/p.db"},
		{config.Database{Kind: config.DatabaseMemory}, "memory://"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestSMTPURL(t *testing.T) {
	for raw, want := range map[string]config.SMTP{
		"smtp://mailer:s3cret@mail.example.com:587":                {Host: "mail.example.com", Port: 587, Username: "mailer", Password: "s3cret", From: "profilesvc@mail.example.com"},
		"smtp://mail.example.com":                                  {Host: "mail.example.com", Port: 25, From: "profilesvc@mail.example.com"},
		"smtps://mailer:s3cret@mail.example.com":                   {Host: "mail.example.com", Port: 465, Username: "mailer", Password: "s3cret", ImplicitTLS: true, From: "profilesvc@mail.example.com"},
		"SMTPS://mail.example.com:2465/":                           {Host: "mail.example.com", Port: 2465, ImplicitTLS: true, From: "profilesvc@mail.example.com"},
		"smtp://mailer@mail.example.com":                           {Host: "mail.example.com", Port: 25, Username: "mailer", From: "profilesvc@mail.example.com"},
		"smtp://us%40er:p%3Ass@[::1]:2525":                         {Host: "::1", Port: 2525, Username: "us@er", Password: "p:ss", From: "profilesvc@::1"},
		"smtp://mail.example.com?from=Ops%20%3Cops@example.com%3E": {Host: "mail.example.com", Port: 25, From: "ops@example.com"},
	} {
		cfg, err := load(map[string]string{"MAIL_TRANSPORT": "smtp", "SMTP_URL": raw})
		if err != nil {
			t.Errorf("SMTP_URL=%s: %v", raw, err)
			continue
		}
		if cfg.SMTP != want {
			t.Errorf("SMTP_URL=%s: SMTP = %+v, want %+v", raw, cfg.SMTP, want)
		}
	}
}

func TestSMTPURLRefusals(t *testing.T) {
	for raw, problem := range map[string]string{
		"":                                                      "is required when MAIL_TRANSPORT=smtp",
		"http://u:hunter2@mail.example.com":                     `scheme "http" is not smtp or smtps`,
		"mail.example.com:25":                                   `scheme "mail.example.com" is not smtp or smtps`,
		"u:hunter2@mail.example.com":                            `scheme "u" is not smtp or smtps`,
		"smtp://u:hunter2@mail example.com:%zz":                 "is not a URL (percent-encode",
		"smtp://u:hunt#er2@mail.example.com":                    "is not a URL (percent-encode",
		"smtp://u:hunter2@:25":                                  "has no host",
		"smtp:mail.example.com":                                 "has no host",
		"smtp://u:hunter2@mail.example.com:0":                   `port "0" is not a number from 1 to 65535`,
		"smtp://u:hunter2@mail.example.com:25/inbox":            `path "/inbox" means nothing to SMTP`,
		"smtp://:hunter2@mail.example.com":                      "has a password but no user name",
		"smtp://u:hunter2@mail.example.com?from=not-an-address": `from="not-an-address" is not one email address`,
		"smtps://u:hunter2@mail.example.com?from=a@example.com&from=b@example.com": `from="a@example.com" is not one email address`,
		"smtp://u:hunter2@mail.example.com?form=a@example.com":                     `parameter "form" is unknown`,
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := load(map[string]string{"MAIL_TRANSPORT": "smtp", "SMTP_URL": raw})
			wantRefusal(t, err, "SMTP_URL", problem, "hunter2", "hunt#er2")
		})
	}
}

func TestSMTPURLIsIgnoredByTheLogTransport(t *testing.T) {
	cfg, err := load(map[string]string{"MAIL_TRANSPORT": "log", "SMTP_URL": "http://nothing"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.MailTransport != "log" || cfg.SMTP != (config.SMTP{}) {
		t.Fatalf("MailTransport = %q, SMTP = %+v; want log and no server", cfg.MailTransport, cfg.SMTP)
	}
}

func TestSMTPStringMasksThePassword(t *testing.T) {
	s := config.SMTP{Host: "mail.example.com", Port: 465, Username: "mailer", Password: "hunter2", ImplicitTLS: true}
	if got, want := s.String(), "smtps://mailer:xxxxx@mail.example.com:465"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
