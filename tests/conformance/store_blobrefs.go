package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// garbage returns the candidates Garbage finds, sorted.
func (f storeFixture) garbage(ctx context.Context, releasedBy time.Time, limit int) []string {
	f.t.Helper()
	got, err := f.s.BlobRefs().Garbage(ctx, releasedBy, limit)
	f.must("Garbage", err)
	got = slices.Clone(got)
	slices.Sort(got)
	return got
}

func (f storeFixture) release(at time.Time, shas ...string) {
	f.t.Helper()
	f.must("Release", f.s.BlobRefs().Release(f.ctx, at, shas...))
}

func (f storeFixture) uploadsInProgress(now time.Time) bool {
	f.t.Helper()
	busy, err := f.s.BlobRefs().UploadsInProgress(f.ctx, now)
	f.must("UploadsInProgress", err)
	return busy
}

func sortedSHAs(shas ...string) []string {
	out := slices.Clone(shas)
	slices.Sort(out)
	return out
}

func runBlobRefs(t *testing.T, newStore NewStore) {
	t.Run("Release, Garbage and Forget", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a, b, c := storeSHA(), storeSHA(), storeSHA()
		t1, t2 := storeAt(time.Hour), storeAt(2*time.Hour)
		checkIDs(t, "Garbage of no candidates", f.garbage(f.ctx, t2, 10), nil)
		f.release(t1.In(storeZone), a, b)
		f.release(t2, c)
		f.release(t2) // no blobs: nothing to record
		checkIDs(t, "Garbage released before the first", f.garbage(f.ctx, t1.Add(-time.Millisecond), 10), nil)
		checkIDs(t, "Garbage released by the first", f.garbage(f.ctx, t1.In(storeZone), 10), sortedSHAs(a, b))
		checkIDs(t, "Garbage released by the second", f.garbage(f.ctx, t2, 10), sortedSHAs(a, b, c))
		// The earliest released come first.
		if got := f.garbage(f.ctx, t2, 2); fmt.Sprint(got) != fmt.Sprint(sortedSHAs(a, b)) {
			t.Errorf("Garbage with limit 2 = %v, want the two released first %v", got, sortedSHAs(a, b))
		}
		checkIDs(t, "Garbage with limit 0", f.garbage(f.ctx, t2, 0), nil)
		// Garbage only reads the candidates: they stay until forgotten.
		checkIDs(t, "Garbage again", f.garbage(f.ctx, t2, 10), sortedSHAs(a, b, c))

		f.must("Forget", f.s.BlobRefs().Forget(f.ctx, a, storeSHA()))
		f.must("Forget of none", f.s.BlobRefs().Forget(f.ctx))
		checkIDs(t, "Garbage after Forget", f.garbage(f.ctx, t2, 10), sortedSHAs(b, c))
	})

	t.Run("Release keeps the later time", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		a, b := storeSHA(), storeSHA()
		t1, t2, t3 := storeAt(time.Hour), storeAt(2*time.Hour), storeAt(3*time.Hour)
		f.release(t1, a)
		f.release(t3, a, b)
		f.release(t1, b, b)
		checkIDs(t, "Garbage by a time between", f.garbage(f.ctx, t2, 10), nil)
		checkIDs(t, "Garbage by the later time", f.garbage(f.ctx, t3, 10), sortedSHAs(a, b))
	})

	t.Run("a blob a profile or a snapshot of any team refers to is not garbage", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		at := storeAt(time.Hour)
		p := f.profile(storeID("tm"), "Holds data")
		p.Data = &profile.Data{Content: *f.content(1000), UpdatedAt: storeAt(0)}
		p.Cookies = f.content(10)
		f.createProfiles(p)
		// Only a snapshot of another team refers to its blobs.
		s := f.snapshot(storeID("tm"), storeID("prf"))
		f.createSnapshots(s)
		free := storeSHA()
		f.release(at, p.Data.SHA256, p.Cookies.SHA256, s.Data.SHA256, s.Cookies.SHA256, free)
		checkIDs(t, "Garbage", f.garbage(f.ctx, at, 10), []string{free})

		// The referred candidates were forgotten on the way: once nothing
		// refers to them any more, they are not candidates until released
		// again.
		oldData := p.Data.SHA256
		next := p
		next.Data, next.Cookies, next.Version = &profile.Data{Content: *f.content(2000), UpdatedAt: storeAt(time.Minute)}, nil, 2
		f.must("Update", f.s.Profiles().Update(f.ctx, next, 1))
		_, err := f.s.Snapshots().Delete(f.ctx, s.TeamID, s.ProfileID, s.ID)
		f.must("Delete snapshot", err)
		checkIDs(t, "Garbage once nothing refers to the forgotten", f.garbage(f.ctx, at, 10), []string{free})
		f.release(at, oldData, p.Cookies.SHA256, s.Data.SHA256, next.Data.SHA256)
		checkIDs(t, "Garbage after releasing again", f.garbage(f.ctx, at, 10), sortedSHAs(free, oldData, p.Cookies.SHA256, s.Data.SHA256))
	})

	t.Run("uploads in progress until they end or expire", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		now := storeAt(time.Hour)
		refs := f.s.BlobRefs()
		if f.uploadsInProgress(now) {
			t.Fatal("UploadsInProgress with no upload")
		}
		first, expired := storeID("upl"), storeID("upl")
		f.must("BeginUpload", refs.BeginUpload(f.ctx, first, now.Add(time.Hour).In(storeZone)))
		f.must("BeginUpload of an expired one", refs.BeginUpload(f.ctx, expired, now))
		if !f.uploadsInProgress(now) || !f.uploadsInProgress(now.Add(59*time.Minute)) {
			t.Error("an upload that has not expired is not in progress")
		}
		if f.uploadsInProgress(now.Add(time.Hour)) {
			t.Error("an upload is still in progress at its expiry")
		}
		f.must("EndUpload", refs.EndUpload(f.ctx, first))
		if f.uploadsInProgress(now) {
			t.Error("an ended upload is still in progress")
		}
		f.must("EndUpload of an ended upload", refs.EndUpload(f.ctx, first))
		f.must("EndUpload of an unknown upload", refs.EndUpload(f.ctx, storeID("upl")))
	})

	t.Run("writes inside a unit of work commit or roll back with it", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		at := storeAt(time.Hour)
		kept, released := storeSHA(), storeSHA()
		f.release(at, kept)
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.BlobRefs().Release(ctx, at, released); err != nil {
				return err
			}
			if err := tx.BlobRefs().Forget(ctx, kept); err != nil {
				return err
			}
			if err := tx.BlobRefs().BeginUpload(ctx, storeID("upl"), at.Add(time.Hour)); err != nil {
				return err
			}
			checkIDs(t, "Garbage inside the unit", f.garbage(ctx, at, 10), []string{released})
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do returned %v, want the error fn returned", err)
		}
		checkIDs(t, "Garbage after the failed unit", f.garbage(f.ctx, at, 10), []string{kept})
		if f.uploadsInProgress(at) {
			t.Error("an upload begun in a failed unit is in progress")
		}
	})

	// A collector's unit that saw no upload deletes blobs until it ends: an
	// upload that begins meanwhile must wait for it. The upload gets a
	// bounded time to finish while the unit is open; on a store that lets
	// it through, it finishes within that time and is caught.
	t.Run("BeginUpload waits for a unit that called UploadsInProgress", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		now := storeAt(time.Hour)
		var unitOpen atomic.Bool
		var beganWhileOpen atomic.Bool
		began := make(chan error, 1)
		storeWithin(t, "BeginUpload during a collecting unit", func() {
			err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				busy, err := tx.BlobRefs().UploadsInProgress(ctx, now)
				if err != nil || busy {
					return fmt.Errorf("UploadsInProgress = %v, %w", busy, err)
				}
				unitOpen.Store(true)
				go func() {
					err := f.s.BlobRefs().BeginUpload(f.ctx, storeID("upl"), now.Add(time.Hour))
					beganWhileOpen.Store(unitOpen.Load())
					began <- err
				}()
				select {
				case err := <-began:
					began <- err
				case <-time.After(250 * time.Millisecond):
				}
				unitOpen.Store(false)
				return nil
			})
			f.must("collecting unit", err)
			f.must("BeginUpload", <-began)
		})
		if beganWhileOpen.Load() {
			t.Error("BeginUpload finished while a unit that called UploadsInProgress was open")
		}
		if !f.uploadsInProgress(now) {
			t.Error("the upload begun after the unit is not in progress")
		}
	})

	// Each unit waits after Garbage until the other has called it too, so
	// that on a store whose units run side by side the two overlap; on one
	// that runs units one at a time the wait is bounded.
	t.Run("concurrent units take disjoint candidates", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		const n = 10
		at := storeAt(time.Hour)
		shas := make([]string, n)
		for i := range shas {
			shas[i] = storeSHA()
		}
		f.release(at, shas...)
		var arrived sync.WaitGroup
		arrived.Add(2)
		together := make(chan struct{})
		go func() {
			arrived.Wait()
			close(together)
		}()
		taken := make([][]string, 2)
		storeWithin(t, "concurrent collecting units", func() {
			errs := runConcurrently(2, func(i int) error {
				return inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
					got, err := tx.BlobRefs().Garbage(ctx, at, n/2)
					if err != nil {
						return err
					}
					taken[i] = got
					arrived.Done()
					select {
					case <-together:
					case <-time.After(250 * time.Millisecond):
					}
					return tx.BlobRefs().Forget(ctx, got...)
				})
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("unit %d: %v", i, err)
				}
			}
		})
		union := append(slices.Clone(taken[0]), taken[1]...)
		slices.Sort(union)
		checkIDs(t, fmt.Sprintf("both units' candidates (%v and %v)", taken[0], taken[1]), union, sortedSHAs(shas...))
		checkIDs(t, "Garbage after both", f.garbage(f.ctx, at, n), nil)
	})
}
