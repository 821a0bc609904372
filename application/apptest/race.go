package apptest

import (
	"context"
	"fmt"
	"time"
)

// ConsumedMeanwhile stands in for the read of a single-use row (a token, an
// invitation) that loses a race: it reads row id with byID, then lets a
// rival consume it with consume, at time at, and returns the row as it was
// read.
// The caller's own consume then finds the row spent, as when another
// request commits between a read and its write. A module's repository
// double calls it with that repository's methods.
func ConsumedMeanwhile[T any](ctx context.Context, id string, at time.Time,
	byID func(ctx context.Context, id string) (T, error),
	consume func(ctx context.Context, id string, at time.Time) (bool, error),
) (T, error) {
	row, err := byID(ctx, id)
	if err != nil {
		return row, err
	}
	if won, err := consume(ctx, id, at); err != nil || !won {
		var none T
		return none, fmt.Errorf("the rival did not consume %s: %t, %v", id, won, err)
	}
	return row, nil
}
