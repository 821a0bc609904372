package browserdata

import (
	"context"
	"time"
)

// BlobGrace is how long a blob stays after it may have lost its last
// reference. It is longer than any unit of work can last (their queries
// are bounded by seconds), so a unit that read a reference before another
// dropped it has committed, and its own reference is visible, by the time
// the collector looks.
const BlobGrace = time.Minute

// collectBatch is how many blobs one unit of the collector deletes.
const collectBatch = 100

// Collect deletes the blobs that no profile and no snapshot refers to,
// and returns how many. It deletes nothing while an upload is in progress
// (an upload may be about to refer to any blob), and each unit keeps new
// uploads from starting until it ends, so that none refers to a blob it
// deletes.
func (b *Blobs) Collect(ctx context.Context) (int, error) {
	total := 0
	for {
		var doomed []string
		err := b.d.Tx.Do(ctx, func(ctx context.Context) error {
			now := b.d.Clock.Now()
			busy, err := b.d.BlobRefs.UploadsInProgress(ctx, now)
			if err != nil || busy {
				return err
			}
			doomed, err = b.d.BlobRefs.Garbage(ctx, now.Add(-BlobGrace), collectBatch)
			if err != nil {
				return err
			}
			for _, sum := range doomed {
				if err := b.d.Blobs.Delete(ctx, sum); err != nil {
					return err
				}
			}
			return b.d.BlobRefs.Forget(ctx, doomed...)
		})
		if err != nil {
			return total, err
		}
		total += len(doomed)
		if len(doomed) < collectBatch {
			return total, nil
		}
	}
}
