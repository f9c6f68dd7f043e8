package dualwrite

// Excluded counts what the Store left out because its key is under an
// excluded prefix (Config.ExcludePrefixes, kv.ReservedPrefix).
type Excluded struct {
	// Writes are the writes made through the Store (single or bulk) that
	// went to the authoritative store alone.
	Writes uint64 `json:"writes"`
	// Copies are the ingested copies (tee mode) dropped.
	Copies uint64 `json:"copies"`
	// Reads are the sampled reads, the Store's own and a tee's, not
	// compared; Journal the keys a journal held from an earlier run
	// (before the prefix was excluded), dropped from it at New.
	Reads   uint64 `json:"reads"`
	Journal uint64 `json:"journal"`
}

// ExcludedPrefixes returns the prefixes the Store leaves out,
// kv.ReservedPrefix first: what a tee is told to leave out too.
func (s *Store) ExcludedPrefixes() []string { return s.cfg.exclude.Prefixes() }

func (s *Store) excludes(key string) bool { return s.cfg.exclude.Excludes(key) }

// excluded reports whether a write of key is left out of the migration,
// and counts it when it is.
func (s *Store) excluded(key string) bool {
	if !s.excludes(key) {
		return false
	}
	s.ctr.excluded.writes.Add(1)
	return true
}

// excludedRead is excluded for a sampled read.
func (s *Store) excludedRead(key string) bool {
	if !s.excludes(key) {
		return false
	}
	s.ctr.excluded.reads.Add(1)
	return true
}
