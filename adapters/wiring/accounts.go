package wiring

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/password"
	"github.com/profilesvc/profilesvc/adapters/token"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// accessTokenTTL is the lifetime of access tokens (API.md: 15 min).
const accessTokenTTL = 15 * time.Minute

// tokenIssuer is the "iss" of access tokens; tokens of another issuer are refused.
const tokenIssuer = "profilesvc"

// Security provides password hashing and access tokens.
var Security = fx.Module("security",
	fx.Provide(
		fx.Annotate(func() *password.Argon2id { return password.NewArgon2id(password.DefaultParams()) }, fx.As(new(ports.PasswordHasher))),
		fx.Annotate(func(cfg config.Config, c ports.Clock, ids ports.IDs) *token.JWT {
			return token.NewJWT(cfg.JWTSecret, tokenIssuer, accessTokenTTL, c, ids)
		}, fx.As(new(ports.TokenIssuer))),
		func(cfg config.Config) auth.Policy {
			p := auth.DefaultPolicy()
			p.APIKeysPerUser = cfg.APIKeysPerUser
			p.RegistrationsPerAddr = cfg.RegistrationsPerAddr
			return p
		},
	),
)

// AccountDeps are the ports of the account use cases.
type AccountDeps struct {
	fx.In
	Store   storage.Store
	Tx      ports.UnitOfWork
	Hasher  ports.PasswordHasher
	Tokens  ports.TokenIssuer
	Limiter ports.RateLimiter
	Mailer  ports.Mailer
	Notices ports.Notices
	LC      fx.Lifecycle
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Policy  auth.Policy
	Config  config.Config
	Listen  *ListenAddr
}

// Accounts provides the account use cases.
var Accounts = fx.Module("accounts", fx.Provide(func(d AccountDeps) (*auth.Service, error) {
	svc, err := auth.New(context.Background(), auth.Deps{
		Tx: d.Tx, Users: d.Store.Users(), APIKeys: d.Store.APIKeys(),
		RefreshTokens: d.Store.RefreshTokens(), ResetTokens: d.Store.ResetTokens(),
		Teams: d.Store.Teams(), Memberships: d.Store.Memberships(),
		Hasher: d.Hasher, Tokens: d.Tokens, Limiter: d.Limiter, Mailer: d.Mailer,
		Notices: d.Notices, Clock: d.Clock, IDs: d.IDs, Log: d.Log, Policy: d.Policy,
		ConsoleURL: consoleURL(d.Config, d.Listen),
	})
	if err != nil {
		return nil, err
	}
	d.LC.Append(fx.StopHook(svc.Close))
	return svc, nil
}))
