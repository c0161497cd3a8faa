package agentconn

// Connections returns how many agent sockets are open on this replica.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.computes {
		n += len(l)
	}
	return n
}
