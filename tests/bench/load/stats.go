package load

import (
	"math"
	"slices"
	"time"
)

// merged is the latencies each connection kept, in one sorted slice.
func merged(perConn [][]time.Duration) []time.Duration {
	out := slices.Concat(perConn...)
	SortDurations(out)
	return out
}

// SortDurations sorts d in place, ascending.
func SortDurations(d []time.Duration) { slices.Sort(d) }

// Percentile returns the nearest-rank q-th percentile (0 < q <= 100) of
// sorted, 0 when it is empty: the smallest value that at least q percent
// of the values do not exceed.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 when it is empty. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
