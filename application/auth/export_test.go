package auth

// NearLookups returns how many lookups of the in-process cache hit and
// missed, so that tests count what a warm request costs.
func (s *Service) NearLookups() (hits, misses int64) { return s.near.hits.Load(), s.near.misses.Load() }
