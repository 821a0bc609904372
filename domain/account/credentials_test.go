package account_test

import (
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
)

var now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))

func TestNewAPIKey(t *testing.T) {
	for _, name := range []string{"", "   ", strings.Repeat("é", 101)} {
		if _, err := account.NewAPIKey("key_1", "tm_1", "usr_1", name, "psk_1", "s", now); !domain.IsKind(err, domain.KindValidation) {
			t.Errorf("name %q: %v, want a validation error", name, err)
		}
	}
	k, err := account.NewAPIKey("key_1", "tm_1", "usr_1", "  "+strings.Repeat("é", 100)+" ", "psk_1", "s3cret", now)
	if err != nil {
		t.Fatalf("a 100-character name: %v", err)
	}
	if k.Name != strings.Repeat("é", 100) || k.CreatedAt.Location() != time.UTC || !k.CreatedAt.Equal(now) {
		t.Fatalf("NewAPIKey = %+v: want the name trimmed and the time in UTC", k)
	}
	if !account.SecretMatches(k.Hash, "s3cret") || account.SecretMatches(k.Hash, "s3cre") {
		t.Fatal("the key's hash matches the wrong secret or not its own")
	}
}

func TestResetTokenRedeemable(t *testing.T) {
	tok := account.ResetToken{ID: "rst_1", Hash: account.Digest("s3cret"), ExpiresAt: now.Add(time.Hour)}
	if !tok.Redeemable("s3cret", now) {
		t.Fatal("a fresh token with its secret is not redeemable")
	}
	if tok.Redeemable("other", now) || tok.Redeemable("s3cret", now.Add(time.Hour)) {
		t.Fatal("a wrong secret or an expired token is redeemable")
	}
	tok.UsedAt = &now
	if tok.Redeemable("s3cret", now) {
		t.Fatal("a used token is redeemable")
	}
}

func TestNamesRefuseDisguisingCharacters(t *testing.T) {
	for _, name := range []string{"Ada\nLovelace", "Ada \u202eecalevol", "Ada\u0085Lovelace"} {
		if _, err := account.NewUser("usr_1", "ada@example.com", name, "hash", "tm_1", now); !domain.IsKind(err, domain.KindValidation) {
			t.Errorf("NewUser name %q: %v, want a validation error", name, err)
		}
		if _, err := account.NewAPIKey("key_1", "tm_1", "usr_1", name, "psk_1", "s", now); !domain.IsKind(err, domain.KindValidation) {
			t.Errorf("NewAPIKey name %q: %v, want a validation error", name, err)
		}
	}
	if _, err := account.NewUser("usr_1", "ada@example.com", "Ada Lovelace ☃", "hash", "tm_1", now); err != nil {
		t.Fatalf("NewUser with a plain name: %v", err)
	}
}
