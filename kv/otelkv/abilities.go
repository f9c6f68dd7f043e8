package otelkv

import (
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/internal/forward"
)

// withAbilities returns s with exactly the optional abilities of the store it
// instruments, each one traced.
func (s *Store) withAbilities() kv.Store {
	return forward.Compose(s, s.inner, forward.Abilities{
		GetEntry:    s.getEntry,
		PutEntry:    s.putEntry,
		GetValue:    s.getValue,
		GetMetadata: s.getMetadata,
		GetMany:     s.getMany,
		PutMany:     s.putMany,
		DeleteMany:  s.deleteMany,
	})
}
