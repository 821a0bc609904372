package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestKeyUsesAreDueOncePerMinute(t *testing.T) {
	t.Parallel()
	var u keyUses
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		id   string
		at   time.Duration
		want bool
	}{
		{"key_a", 0, true},
		{"key_a", 59 * time.Second, false},
		{"key_b", 59 * time.Second, true},
		{"key_a", time.Minute, true},
		{"key_a", time.Minute + time.Second, false},
	} {
		if got := u.due(c.id, t0.Add(c.at)); got != c.want {
			t.Fatalf("%s at %v: due %v, want %v", c.id, c.at, got, c.want)
		}
	}
}

// Past keyUsesKept keys, those recorded a minute ago or more are forgotten;
// the recent ones are kept, so their next use within the minute is not due.
func TestKeyUsesForgetOldKeysPastTheBound(t *testing.T) {
	t.Parallel()
	var u keyUses
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range keyUsesKept - 1 {
		u.due(fmt.Sprintf("key_old%d", i), t0)
	}
	u.due("key_recent", t0.Add(30*time.Second))
	u.due("key_new", t0.Add(time.Minute))
	if n := len(u.last); n != 2 {
		t.Fatalf("%d keys remembered, want key_recent and key_new", n)
	}
	if u.due("key_recent", t0.Add(time.Minute)) {
		t.Fatal("a key recorded 30 s ago was forgotten")
	}
}
