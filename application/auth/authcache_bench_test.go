package auth_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/application/auth"
)

// What authentication costs a warm request, by API key and by bearer: the
// store is never read, so this is the whole of it.
func BenchmarkAuthenticateWarm(b *testing.B) {
	e := newEnv()
	svc, err := auth.New(ctx, e.deps)
	if err != nil {
		b.Fatal(err)
	}
	in, err := svc.Register(ctx, auth.RegisterInput{Email: "ada@example.com", Password: password, Name: "Ada"})
	if err != nil {
		b.Fatal(err)
	}
	actor, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken})
	if err != nil {
		b.Fatal(err)
	}
	k, err := svc.CreateAPIKey(ctx, actor, "ci")
	if err != nil {
		b.Fatal(err)
	}
	for name, c := range map[string]auth.Credentials{"key": {APIKey: k.Key}, "bearer": {BearerToken: in.Tokens.AccessToken}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := svc.Authenticate(ctx, c); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
