package dualwrite

import (
	"math/bits"
	"sync"
)

// A copy's value is the Store's own: the caller may reuse its buffer once
// its write returns. The buffers of small values are recycled once the
// copy has run, since kv.Store's contract forbids a store to keep a
// value past its call: in size classes of powers of two from 128 B to
// 16 KiB, each a sync.Pool (so emptied within two garbage collections
// once writes stop); a larger value is a buffer of its own.
const (
	minBufShift = 7 // 128 B
	bufClasses  = 8 // up to 16 KiB
)

var valueBufs [bufClasses]sync.Pool

// valueBuf is a recycled buffer; the pools hold its pointer, so that
// Get and Put box no slice header.
type valueBuf struct{ b []byte }

// bufClass returns the size class of a value of n bytes, -1 for one too
// large to recycle.
func bufClass(n int) int {
	if n <= 1<<minBufShift {
		return 0
	}
	c := bits.Len(uint(n-1)) - minBufShift
	if c >= bufClasses {
		return -1
	}
	return c
}

// cloneValue returns a copy of v, with the recycled buffer that holds it
// (nil when it has a buffer of its own), to be given back by freeValue
// once no one reads the copy.
func cloneValue(v []byte) ([]byte, *valueBuf) {
	c := bufClass(len(v))
	if c < 0 {
		return append(make([]byte, 0, len(v)), v...), nil
	}
	vb, _ := valueBufs[c].Get().(*valueBuf)
	if vb == nil {
		vb = &valueBuf{b: make([]byte, 0, 1<<(c+minBufShift))}
	}
	vb.b = append(vb.b[:0], v...)
	return vb.b, vb
}

// freeValue gives a buffer from cloneValue back; nil is ignored.
func freeValue(vb *valueBuf) {
	if vb == nil {
		return
	}
	vb.b = vb.b[:0]
	valueBufs[bufClass(cap(vb.b))].Put(vb)
}
