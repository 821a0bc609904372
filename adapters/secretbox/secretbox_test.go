package secretbox

import (
	"bytes"
	"errors"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func newBox(t *testing.T, key []byte) *Box {
	t.Helper()
	b, err := New(key)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := newBox(t, testKey)
	for _, plain := range [][]byte{[]byte("whsec_s3cr3t"), {}, bytes.Repeat([]byte{0xff}, 4096)} {
		sealed, err := b.Seal(plain)
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		if len(plain) > 0 && bytes.Contains(sealed, plain) {
			t.Fatal("sealed bytes contain the plaintext")
		}
		got, err := b.Open(sealed)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, want %q", got, plain)
		}
	}
}

func TestOpenWithAnotherBoxOfTheSameKey(t *testing.T) {
	sealed, err := newBox(t, testKey).Seal([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := newBox(t, bytes.Clone(testKey)).Open(sealed)
	if err != nil || string(got) != "secret" {
		t.Fatalf("Open = %q, %v; a restarted service must open its secrets", got, err)
	}
}

func TestSealIsRandomised(t *testing.T) {
	b := newBox(t, testKey)
	a, _ := b.Seal([]byte("same"))
	c, _ := b.Seal([]byte("same"))
	if bytes.Equal(a, c) {
		t.Fatal("sealing the same plaintext twice gave the same bytes")
	}
	if a[0] != version1 || c[0] != version1 {
		t.Fatalf("version bytes %d, %d, want %d", a[0], c[0], version1)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	b := newBox(t, testKey)
	sealed, err := b.Seal([]byte("whsec_s3cr3t"))
	if err != nil {
		t.Fatal(err)
	}
	// Flip one bit in every byte after the version, one at a time: nonce,
	// ciphertext and tag are all authenticated.
	for i := 1; i < len(sealed); i++ {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := b.Open(bad); !errors.Is(err, ErrOpen) {
			t.Fatalf("byte %d flipped: Open err = %v, want ErrOpen", i, err)
		}
	}
	for _, bad := range [][]byte{nil, {}, sealed[:1], sealed[:len(sealed)-1], append(bytes.Clone(sealed), 0)} {
		if _, err := b.Open(bad); err == nil {
			t.Fatalf("Open(%d bytes) succeeded", len(bad))
		}
	}
	bad := bytes.Clone(sealed)
	bad[0] = 2
	if _, err := b.Open(bad); err == nil {
		t.Fatal("Open with an unknown version succeeded")
	}
}

func TestWrongKeyFails(t *testing.T) {
	sealed, err := newBox(t, testKey).Seal([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Clone(testKey)
	other[0] ^= 1
	if _, err := newBox(t, other).Open(sealed); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with another key: err = %v, want ErrOpen", err)
	}
}

func TestEmptyKeyIsRefused(t *testing.T) {
	for _, k := range [][]byte{nil, {}} {
		if _, err := New(k); !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("New(%q) err = %v, want ErrEmptyKey", k, err)
		}
	}
}
