package poll

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recordingTB keeps the failures a helper reports instead of ending the test.
type recordingTB struct {
	testing.TB
	failures []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatal(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var looks atomic.Int32
	rec := &recordingTB{TB: t}
	Until(rec, "the third look", func() bool { return looks.Add(1) == 3 })
	if len(rec.failures) != 0 || looks.Load() != 3 {
		t.Fatalf("failures %q after %d looks, want none after 3", rec.failures, looks.Load())
	}
}

func TestWithinFailsWithWhatWasAwaited(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	Within(rec, 20*time.Millisecond, "the sky to fall", func() bool { return false })
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "waiting for the sky to fall") {
		t.Fatalf("failures %q, want one naming what was awaited", rec.failures)
	}
}

func TestCheckFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	var looks atomic.Int32
	Check(rec, 20*time.Millisecond, "a reply", func() error { return fmt.Errorf("look %d: no reply", looks.Add(1)) })
	want := fmt.Sprintf("look %d: no reply", looks.Load())
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "a reply") || !strings.HasSuffix(rec.failures[0], want) {
		t.Fatalf("failures %q, want one naming a reply and ending with %q", rec.failures, want)
	}
}

func TestThroughoutFailsAtTheFirstError(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	var looks atomic.Int32
	Throughout(rec, time.Minute, func() error {
		if looks.Add(1) == 2 {
			return errors.New("a delivery arrived")
		}
		return nil
	})
	if len(rec.failures) != 1 || rec.failures[0] != "a delivery arrived" || looks.Load() != 2 {
		t.Fatalf("failures %q after %d looks, want the delivery reported at the second", rec.failures, looks.Load())
	}
}

func TestThroughoutLooksForTheWholeSpan(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	start := time.Now()
	Throughout(rec, 30*time.Millisecond, func() error { return nil })
	if len(rec.failures) != 0 || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("failures %q after %s, want none after 30ms", rec.failures, time.Since(start))
	}
}
