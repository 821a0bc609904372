package token_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/ids"
	"github.com/profilesvc/profilesvc/adapters/token"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

const issuer = "profilesvc"

var (
	secret = []byte("0123456789abcdef0123456789abcdef")
	start  = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
)

func newIssuer(t *testing.T) (*token.JWT, *clock.Fake) {
	t.Helper()
	c := clock.NewFake(start)
	return token.NewJWT(secret, issuer, 15*time.Minute, c, ids.NewULID(c)), c
}

func TestRoundTrip(t *testing.T) {
	j, c := newIssuer(t)
	c.Advance(1500 * time.Millisecond)
	signed, issued, err := j.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(issued.ID, "jti_") {
		t.Errorf("ID = %q, want a jti_ id", issued.ID)
	}
	wantIat := start.Add(time.Second)
	if !issued.IssuedAt.Equal(wantIat) || !issued.ExpiresAt.Equal(wantIat.Add(15*time.Minute)) {
		t.Errorf("times = %v .. %v, want %v .. +15m", issued.IssuedAt, issued.ExpiresAt, wantIat)
	}
	c.Advance(14 * time.Minute)
	got, err := j.Verify(signed)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got != issued {
		t.Fatalf("Verify = %+v, want %+v", got, issued)
	}
	payload := decodePayload(t, signed)
	for _, k := range []string{"sub", "tid", "jti", "exp", "iat", "iss"} {
		if _, ok := payload[k]; !ok {
			t.Errorf("claim %s missing from %v", k, payload)
		}
	}
	if payload["iss"] != issuer || payload["sub"] != "usr_1" || payload["tid"] != "tea_1" {
		t.Errorf("payload = %v", payload)
	}
}

func TestIssueRequiresUserAndTeam(t *testing.T) {
	j, _ := newIssuer(t)
	for _, c := range []ports.AccessClaims{{TeamID: "tea_1"}, {UserID: "usr_1"}} {
		if _, _, err := j.Issue(c); err == nil {
			t.Errorf("Issue(%+v) succeeded", c)
		}
	}
}

func TestExpired(t *testing.T) {
	j, c := newIssuer(t)
	signed, _, err := j.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1"})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(15*time.Minute + time.Minute)
	expectRefused(t, j, signed)
}

func TestRefused(t *testing.T) {
	j, _ := newIssuer(t)
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{
			"sub": "usr_1", "tid": "tea_1", "jti": "jti_1", "iss": issuer,
			"iat": start.Unix(), "exp": start.Add(15 * time.Minute).Unix(),
		}
	}
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	hs256 := func(key []byte, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// The control: a token built the same way with the right key and claims
	// is accepted, so every refusal below is for the one thing changed.
	if _, err := j.Verify(hs256(secret, valid())); err != nil {
		t.Fatalf("hand-built valid token refused: %v", err)
	}

	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, valid()).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	good := hs256(secret, valid())
	parts := strings.Split(good, ".")
	otherPayload := base64.RawURLEncoding.EncodeToString(mustJSON(t, with("sub", "usr_admin")))

	for name, tok := range map[string]string{
		"alg none":                none,
		"alg none, no signature":  strings.TrimSuffix(none, "."),
		"HS512 with the same key": hs512,
		"RS256 header, HMAC body": hmacWithHeader(t, `{"alg":"RS256","typ":"JWT"}`, valid()),
		"HS256 with another key":  hs256([]byte("another-secret-another-secret-00"), valid()),
		"missing exp":             hs256(secret, without("exp")),
		"missing iat":             hs256(secret, without("iat")),
		"missing sub":             hs256(secret, without("sub")),
		"empty sub":               hs256(secret, with("sub", "")),
		"missing tid":             hs256(secret, without("tid")),
		"another issuer":          hs256(secret, with("iss", "someone-else")),
		"no issuer":               hs256(secret, without("iss")),
		"issued in the future":    hs256(secret, with("iat", start.Add(time.Hour).Unix())),
		"expired":                 hs256(secret, with("exp", start.Add(-time.Minute).Unix())),
		"payload swapped":         parts[0] + "." + otherPayload + "." + parts[2],
		"signature stripped":      parts[0] + "." + parts[1] + ".",
		"garbage":                 "not-a-token",
		"empty":                   "",
		"three garbage parts":     "a.b.c",
		"bearer prefix left on":   "Bearer " + good,
	} {
		t.Run(name, func(t *testing.T) { expectRefused(t, j, tok) })
	}
}

func expectRefused(t *testing.T, j *token.JWT, tok string) {
	t.Helper()
	got, err := j.Verify(tok)
	if err == nil {
		t.Fatalf("Verify accepted it: %+v", got)
	}
	if !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("Verify error kind = %v, want unauthorized (%v)", domain.KindOf(err), err)
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Message != "invalid or expired access token" || de.Err == nil {
		t.Fatalf("Verify error = %#v, want the fixed message with the reason wrapped", err)
	}
	if got != (ports.AccessClaims{}) {
		t.Fatalf("claims returned with the error: %+v", got)
	}
}

// hmacWithHeader signs header.payload with HS256 under the real secret while
// the header names another algorithm: the classic confusion attack.
func hmacWithHeader(t *testing.T, header string, c jwt.MapClaims) string {
	t.Helper()
	signing := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." +
		base64.RawURLEncoding.EncodeToString(mustJSON(t, c))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodePayload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", tok, len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToleratesSmallClockSkewBetweenInstances(t *testing.T) {
	ahead := clock.NewFake(start.Add(3 * time.Second))
	issuerAhead := token.NewJWT(secret, issuer, 15*time.Minute, ahead, ids.NewULID(ahead))
	signed, _, err := issuerAhead.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := newIssuer(t)
	if _, err := j.Verify(signed); err != nil {
		t.Fatalf("token from an instance 3s ahead refused: %v", err)
	}
}

func TestSessionVersionRoundTrips(t *testing.T) {
	j, _ := newIssuer(t)
	signed, _, err := j.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1", SessionVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	if v := decodePayload(t, signed)["ver"]; v != float64(3) {
		t.Fatalf("ver claim = %v, want 3", v)
	}
	got, err := j.Verify(signed)
	if err != nil || got.SessionVersion != 3 {
		t.Fatalf("Verify = %+v, %v; want session version 3", got, err)
	}
	first, _, err := j.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodePayload(t, first)["ver"]; ok {
		t.Fatal("version 0 is written as a claim; tokens of before the claim existed must read the same")
	}
	if got, err := j.Verify(first); err != nil || got.SessionVersion != 0 {
		t.Fatalf("Verify = %+v, %v; want version 0", got, err)
	}
}

// A token verified once is remembered, but only for as long as it is valid:
// the same text is refused once it has expired, and a token that differs
// from a remembered one by a byte is checked on its own.
func TestRememberedTokenStillExpiresAndIsNotAKeyForOthers(t *testing.T) {
	j, c := newIssuer(t)
	signed, _, err := j.Issue(ports.AccessClaims{UserID: "usr_1", TeamID: "tea_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Verify(signed); err != nil {
		t.Fatalf("fresh token refused: %v", err)
	}
	parts := strings.Split(signed, ".")
	sig := []byte(parts[2])
	sig[5] ^= 1 // another base64url letter: another signature
	forged := parts[0] + "." + parts[1] + "." + string(sig)
	expectRefused(t, j, forged)
	// Still valid within the tolerated skew after the expiry...
	c.Advance(15*time.Minute + 4*time.Second)
	if _, err := j.Verify(signed); err != nil {
		t.Fatalf("token refused within the skew after its expiry: %v", err)
	}
	// ...and refused after it, although it was remembered.
	c.Advance(2 * time.Second)
	expectRefused(t, j, signed)
}

// More distinct tokens than the memo holds are each still verified.
func TestManyDistinctTokensAllVerify(t *testing.T) {
	j, _ := newIssuer(t)
	const n = 9000
	tokens := make([]string, n)
	for i := range tokens {
		signed, _, err := j.Issue(ports.AccessClaims{UserID: fmt.Sprintf("usr_%d", i), TeamID: "tea_1"})
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = signed
	}
	for round := range 2 {
		for i, signed := range tokens {
			got, err := j.Verify(signed)
			if err != nil || got.UserID != fmt.Sprintf("usr_%d", i) {
				t.Fatalf("round %d token %d: %+v, %v", round, i, got, err)
			}
		}
	}
}
