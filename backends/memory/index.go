package memory

import (
	"slices"
	"sort"
)

// sortedKeys is a set of keys in byte order, for List. It keeps them in
// chunks of at most chunkMax keys, each chunk sorted and every key of a
// chunk before every key of the next, so that adding or removing a key
// moves at most one chunk's keys rather than every key after it: a store of
// a million keys takes a new one in two binary searches and a move of at
// most chunkMax strings, where one sorted slice moved half a million.
type sortedKeys struct {
	chunks [][]string // none empty
}

// chunkMax bounds a chunk; a full chunk splits in two halves, and a chunk
// that shrinks below a quarter of it joins its successor when both fit.
const chunkMax = 512

// chunkFor returns the chunk where key is or would go: the first whose last
// key is not before key, else the last chunk.
func (s *sortedKeys) chunkFor(key string) int {
	i := sort.Search(len(s.chunks), func(i int) bool {
		c := s.chunks[i]
		return c[len(c)-1] >= key
	})
	return min(i, len(s.chunks)-1)
}

// insert adds key, which must not be in the set.
func (s *sortedKeys) insert(key string) {
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, newChunk(key))
		return
	}
	ci := s.chunkFor(key)
	c := s.chunks[ci]
	i, _ := slices.BinarySearch(c, key)
	c = slices.Insert(c, i, key)
	if len(c) <= chunkMax {
		s.chunks[ci] = c
		return
	}
	half := len(c) / 2
	right := append(newChunk(), c[half:]...)
	clear(c[half:])
	s.chunks[ci] = c[:half]
	s.chunks = slices.Insert(s.chunks, ci+1, right)
}

// newChunk returns a chunk of keys with room to grow to a split.
func newChunk(keys ...string) []string {
	return append(make([]string, 0, chunkMax+1), keys...)
}

// remove takes key out of the set, if it is there.
func (s *sortedKeys) remove(key string) {
	if len(s.chunks) == 0 {
		return
	}
	ci := s.chunkFor(key)
	c := s.chunks[ci]
	i, found := slices.BinarySearch(c, key)
	if !found {
		return
	}
	s.chunks[ci] = slices.Delete(c, i, i+1)
	s.settle(ci)
}

// settle drops chunk ci when it is empty, or has it join its successor
// when it is small and both fit in one.
func (s *sortedKeys) settle(ci int) {
	c := s.chunks[ci]
	switch {
	case len(c) == 0:
		s.chunks = slices.Delete(s.chunks, ci, ci+1)
	case len(c) < chunkMax/4 && ci+1 < len(s.chunks) && len(c)+len(s.chunks[ci+1]) <= chunkMax:
		s.chunks[ci] = append(c, s.chunks[ci+1]...)
		s.chunks = slices.Delete(s.chunks, ci+1, ci+2)
	}
}

// retain keeps the keys for which keep reports true, and joins each chunk
// left small to the one before it when both fit in one, so that a sweep
// that empties most of a large store leaves no trail of near-empty chunks
// holding their memory: no two neighbours fit in one chunk afterwards, so
// the chunks are more than half full on average.
func (s *sortedKeys) retain(keep func(string) bool) {
	out := s.chunks[:0]
	for _, c := range s.chunks {
		c = slices.DeleteFunc(c, func(k string) bool { return !keep(k) })
		switch last := len(out) - 1; {
		case len(c) == 0:
		case last >= 0 && len(out[last])+len(c) <= chunkMax:
			out[last] = append(out[last], c...)
			clear(c)
		default:
			out = append(out, c)
		}
	}
	clear(s.chunks[len(out):])
	s.chunks = out
}

// place is a position in the order of the keys: chunk c, index i in it.
type place struct{ c, i int }

// seek returns the place of the first key not before start, or, when after
// is set, the first key after start.
func (s *sortedKeys) seek(start string, after bool) place {
	if len(s.chunks) == 0 {
		return place{}
	}
	c := s.chunkFor(start)
	i, found := slices.BinarySearch(s.chunks[c], start)
	if found && after {
		i++
	}
	return s.normal(place{c, i})
}

// at returns the key at p, false past the last key.
func (s *sortedKeys) at(p place) (string, bool) {
	if p.c >= len(s.chunks) {
		return "", false
	}
	return s.chunks[p.c][p.i], true
}

// next returns the place of the key after the one at p.
func (s *sortedKeys) next(p place) place { return s.normal(place{p.c, p.i + 1}) }

// normal moves a place past the end of its chunk to the next chunk's start.
func (s *sortedKeys) normal(p place) place {
	if p.c < len(s.chunks) && p.i == len(s.chunks[p.c]) {
		return place{p.c + 1, 0}
	}
	return p
}
