package hosts

// Connections returns how many hosts are connected to this replica.
func (s *Service) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
