package password

import (
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/profilesvc/profilesvc/domain"
)

// fastParams keep tests quick; the encoding and limits do not depend on cost.
func fastParams(maxConcurrent int) Params {
	return Params{Memory: 64, Time: 1, Threads: 1, MaxConcurrent: maxConcurrent, MaxBytes: 32}
}

var phc = regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

func TestDefaultParamsRoundTrip(t *testing.T) {
	ctx := context.Background()
	h := NewArgon2id(DefaultParams())
	hash, err := h.Hash(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !phc.MatchString(hash) {
		t.Fatalf("hash %q is not a PHC argon2id string with the default parameters", hash)
	}
	parts := strings.Split(hash, "$")
	salt, _ := base64.RawStdEncoding.DecodeString(parts[4])
	key, _ := base64.RawStdEncoding.DecodeString(parts[5])
	want := argon2.IDKey([]byte("correct horse battery staple"), salt, 2, 19*1024, 1, 32)
	if string(key) != string(want) {
		t.Fatal("encoded key is not argon2id of the password with the encoded salt and parameters")
	}
	ok, err := h.Verify(ctx, hash, "correct horse battery staple")
	if err != nil || !ok {
		t.Fatalf("Verify of the right password = %v, %v", ok, err)
	}
	ok, err = h.Verify(ctx, hash, "correct horse battery stapl")
	if err != nil || ok {
		t.Fatalf("Verify of a wrong password = %v, %v", ok, err)
	}
	if h.MaxBytes() != 256 {
		t.Fatalf("MaxBytes = %d, want 256", h.MaxBytes())
	}
}

func TestSaltsDiffer(t *testing.T) {
	ctx := context.Background()
	h := NewArgon2id(fastParams(1))
	a, _ := h.Hash(ctx, "same password")
	b, _ := h.Hash(ctx, "same password")
	if a == "" || a == b {
		t.Fatalf("two hashes of one password are equal: %q", a)
	}
}

func TestVerifyReadsParametersFromTheHash(t *testing.T) {
	ctx := context.Background()
	old, err := NewArgon2id(Params{Memory: 32, Time: 3, Threads: 2, MaxConcurrent: 1, MaxBytes: 32}).Hash(ctx, "pw-1234567")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := NewArgon2id(fastParams(1)).Verify(ctx, old, "pw-1234567")
	if err != nil || !ok {
		t.Fatalf("Verify of a hash made with other parameters = %v, %v", ok, err)
	}
}

func TestTooLongRefusedNotTruncated(t *testing.T) {
	ctx := context.Background()
	h := NewArgon2id(fastParams(1))
	exact := strings.Repeat("a", 32)
	hash, err := h.Hash(ctx, exact)
	if err != nil {
		t.Fatalf("Hash of a password of exactly MaxBytes: %v", err)
	}
	long := exact + "b"
	if _, err := h.Hash(ctx, long); !domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("Hash of MaxBytes+1 bytes = %v, want a validation error", err)
	}
	if ok, err := h.Verify(ctx, hash, long); ok || !domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("Verify of MaxBytes+1 bytes = %v, %v, want a validation error", ok, err)
	}
	if h.PeakConcurrent() != 1 {
		t.Fatalf("peak = %d: a refused password was hashed", h.PeakConcurrent())
	}
}

func TestMalformedHashes(t *testing.T) {
	ctx := context.Background()
	h := NewArgon2id(fastParams(1))
	good, err := h.Hash(ctx, "pw")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	with := func(i int, v string) string {
		p := append([]string(nil), parts...)
		p[i] = v
		return strings.Join(p, "$")
	}
	for name, bad := range map[string]string{
		"empty":          "",
		"bcrypt":         "$2a$10$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz01234",
		"argon2i":        with(1, "argon2i"),
		"other version":  with(2, "v=16"),
		"trailing junk":  with(2, "v=19x"),
		"huge memory":    with(3, "m=4194304,t=1,p=1"),
		"no passes":      with(3, "m=64,t=0,p=1"),
		"bad params":     with(3, "m=64;t=1;p=1"),
		"bad salt":       with(4, "!!!"),
		"short key":      with(5, "AAAA"),
		"missing fields": strings.Join(parts[:5], "$"),
	} {
		if ok, err := h.Verify(ctx, bad, "pw"); err == nil || ok {
			t.Errorf("%s: Verify(%q) = %v, %v, want an error", name, bad, ok, err)
		}
	}
}

func TestConcurrentVerifiesStayWithinBound(t *testing.T) {
	ctx := context.Background()
	const bound = 2
	h := NewArgon2id(Params{Memory: 1024, Time: 1, Threads: 1, MaxConcurrent: bound, MaxBytes: 32})
	hash, err := h.Hash(ctx, "pw-1234567")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	start := make(chan struct{})
	for i := range 50 {
		wg.Go(func() {
			<-start
			pw := "pw-1234567"
			if i%2 == 1 {
				pw = "wrong"
			}
			ok, err := h.Verify(ctx, hash, pw)
			if err != nil {
				errs <- err
			} else if ok != (i%2 == 0) {
				errs <- errors.New("wrong answer under concurrency")
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := h.PeakConcurrent(); p < 1 || p > bound {
		t.Fatalf("peak concurrent hashes = %d, want between 1 and %d", p, bound)
	}
}

func TestWaitingHonoursContext(t *testing.T) {
	h := NewArgon2id(fastParams(1))
	hash, err := h.Hash(context.Background(), "pw")
	if err != nil {
		t.Fatal(err)
	}
	h.slots <- struct{}{} // every slot busy

	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := h.Verify(ctx, hash, "pw")
		done <- result{ok, err}
	}()
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.ok {
			t.Fatalf("Verify waiting for a slot after cancel = %v, %v, want context.Canceled", r.ok, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Verify kept waiting after its context was cancelled")
	}

	expired, cancelExpired := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelExpired()
	if _, err := h.Hash(expired, "pw"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash waiting for a slot past its deadline = %v, want context.DeadlineExceeded", err)
	}

	<-h.slots // the slot is free again
	if ok, err := h.Verify(context.Background(), hash, "pw"); err != nil || !ok {
		t.Fatalf("Verify after the slot was freed = %v, %v", ok, err)
	}
}
