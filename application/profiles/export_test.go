package profiles

// KeptPageBytes is the size of the pages this service keeps.
func (s *Service) KeptPageBytes() int {
	s.pages.mu.Lock()
	defer s.pages.mu.Unlock()
	return s.pages.bytes
}
