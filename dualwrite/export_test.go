package dualwrite

// SetCoalescing turns coalescing off and on, for the benchmark that
// measures the drops it saves; it returns the previous setting.
func SetCoalescing(on bool) bool {
	was := coalescing
	coalescing = on
	return was
}

// CopyPending reports whether a copy of a write of key is queued or
// running, as the settle set counts them, for a test that judges each
// report against what is still on its way. A repair is not counted: a
// lost copy is a divergence that its writer repairs too.
func (s *Store) CopyPending(key string) bool {
	s.set.mu.Lock()
	defer s.set.mu.Unlock()
	e, ok := s.set.keys[key]
	return ok && e.copies > 0
}

// LaneOf is the lane a key's operations run in, out of lanes.
func LaneOf(key string, lanes int) int { return int(hashKey(key) % uint64(lanes)) }
