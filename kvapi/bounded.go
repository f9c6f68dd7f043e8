package kvapi

// The fault modes remember things per key (the last write of each key, what
// each edge location cached); a long-running emulator, or a client sending
// many keys or locations, must not make that memory grow without bound.
const (
	// MaxFaultEntries bounds the entries of each fault cache.
	MaxFaultEntries = 1 << 16
	// MaxFaultBytes bounds the bytes of each fault cache: keys, location
	// names, and the values and metadata a location cached.
	MaxFaultBytes = 64 << 20
)

// entryOverhead is what an entry costs beside the bytes it is counted for.
const entryOverhead = 64

// bounded is a map that holds at most maxEntries entries and maxBytes bytes
// (as counted by the caller). Past a bound it drops stale entries, then any
// others (see the package doc), until an eighth of each bound is free, so
// that the scans stay rare. The caller holds the lock that guards it.
type bounded[K comparable, V any] struct {
	m                    map[K]sizedValue[V]
	bytes                int
	maxEntries, maxBytes int
}

type sizedValue[V any] struct {
	v V
	n int
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	e, ok := b.m[k]
	return e.v, ok
}

func (b *bounded[K, V]) put(k K, v V, n int, stale func(V) bool) {
	if b.m == nil {
		b.m = make(map[K]sizedValue[V])
		b.maxEntries = or(b.maxEntries, MaxFaultEntries)
		b.maxBytes = or(b.maxBytes, MaxFaultBytes)
	}
	n += entryOverhead
	b.delete(k)
	if n > b.maxBytes {
		return
	}
	if len(b.m)+1 > b.maxEntries || b.bytes+n > b.maxBytes {
		for old, e := range b.m {
			if stale(e.v) {
				b.delete(old)
			}
		}
		roomy := func() bool { return len(b.m)+1 <= b.maxEntries*7/8 && b.bytes+n <= b.maxBytes*7/8 }
		for old := range b.m {
			if roomy() {
				break
			}
			b.delete(old)
		}
	}
	b.m[k] = sizedValue[V]{v: v, n: n}
	b.bytes += n
}

func (b *bounded[K, V]) delete(k K) {
	if e, ok := b.m[k]; ok {
		b.bytes -= e.n
		delete(b.m, k)
	}
}

func (b *bounded[K, V]) len() int { return len(b.m) }
