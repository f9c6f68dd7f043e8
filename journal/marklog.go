package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// The mark log (what it survives, and why, is in the package doc) is one
// file of two halves of equal size. Records are appended to the
// active one; Seal (called by the Store just before it takes the changes
// it commits) makes the other half active, and the Commit that follows
// drops the sealed half by zeroing its generation. Each half begins with
// a header (magic, generation); each record is a CRC-32C of the half's
// generation and the record, the key's length, the mark and the key, so
// that a record cut short by the process's death, or one left from an
// earlier use of the half, ends the half's replay.
const (
	logSuffix      = ".marks"
	logHeader      = 16
	logRecordFixed = 4 + 2 + 1
	logMagic       = "kvsm"
	// DefaultLogSize is the mark log's size when Options.LogSize is zero:
	// two halves of 8 MiB, each enough for the keys that enter the settle
	// set during one commit: a Workers KV bulk write of 10,000 of the
	// longest keys (512 bytes) takes 5.2 MB. Only the pages records reach
	// are ever touched, the first few of each half but for bursts, so the
	// size costs disk, not memory.
	DefaultLogSize = 16 << 20
	minLogSize     = 2 * (logHeader + logRecordFixed + 512)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// markLog is the mapped file. mu serializes records, seals and drops; a
// record is a copy of at most 519 bytes under it.
type markLog struct {
	mu     sync.Mutex
	f      *os.File
	mem    []byte
	half   int
	active int    // the half records go to
	off    int    // where the next record goes in the active half
	gen    uint64 // the active half's generation
	genSum uint32 // the CRC of gen, which every record's CRC begins with
	sealed int    // the half sealed and not yet dropped, or -1
	closed bool
}

// openLog opens (or creates, at size bytes) the mark log at path and
// locks it for the journal's whole life, waiting up to wait for it: the
// bbolt file's own lock lapses while a compaction replaces it.
func openLog(path string, size int, wait time.Duration) (*markLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*markLog, error) {
		_ = f.Close()
		return nil, err
	}
	if err := lockFile(f, wait); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	switch n := fi.Size(); {
	case n == 0:
		// Reserved, not truncated: a sparse page that the disk cannot
		// hold would fault the process at the copy into it, where the
		// reservation (written where the system cannot reserve) fails
		// here. Not synced: a crash of the machine may lose the log, whose
		// records bbolt holds once committed.
		if err := reserve(f, size); err != nil {
			return fail(err)
		}
	case n < minLogSize || n%2 != 0:
		return fail(fmt.Errorf("%w: the mark log %s has %d bytes", ErrCorrupt, path, n))
	default:
		size = int(n) // the size it was made with
	}
	mem, err := mapFile(f, size)
	if err != nil {
		return fail(err)
	}
	return &markLog{f: f, mem: mem, half: size / 2, sealed: -1}, nil
}

// replay returns the marks the log holds, the older half's first, the
// higher mark winning.
func (l *markLog) replay() map[string]dualwrite.Mark {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]dualwrite.Mark)
	first := 0
	if l.genOf(1) != 0 && (l.genOf(0) == 0 || l.genOf(1) < l.genOf(0)) {
		first = 1
	}
	for _, h := range [2]int{first, 1 - first} {
		l.scan(h, func(key string, m dualwrite.Mark) {
			if m > out[key] {
				out[key] = m
			}
		})
	}
	return out
}

func (l *markLog) base(h int) int { return h * l.half }

func (l *markLog) genOf(h int) uint64 {
	b := l.mem[l.base(h):]
	if string(b[:4]) != logMagic {
		return 0
	}
	return binary.LittleEndian.Uint64(b[8:16])
}

// scan calls fn for each valid record of half h, up to the first that is
// not.
func (l *markLog) scan(h int, fn func(string, dualwrite.Mark)) {
	gen := l.genOf(h)
	if gen == 0 {
		return
	}
	b := l.mem[l.base(h) : l.base(h)+l.half]
	for off := logHeader; off+logRecordFixed <= len(b); {
		n := int(binary.LittleEndian.Uint16(b[off+4:]))
		m := dualwrite.Mark(b[off+6])
		end := off + logRecordFixed + n
		if n == 0 || n > 512 || end > len(b) || (m != dualwrite.MarkUnsettled && m != dualwrite.MarkDirty) ||
			binary.LittleEndian.Uint32(b[off:]) != crc32.Update(genSum(gen), castagnoli, b[off+4:end]) {
			break
		}
		fn(string(b[off+logRecordFixed:end]), m)
		off = end
	}
}

func genSum(gen uint64) uint32 {
	return crc32.Checksum(binary.LittleEndian.AppendUint64(nil, gen), castagnoli)
}

// reset drops every record and starts half 0 afresh, after Load has
// committed what the log held.
func (l *markLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := max(l.genOf(0), l.genOf(1)) + 1
	l.drop(0)
	l.drop(1)
	l.start(0, next)
	l.sealed = -1
}

func (l *markLog) drop(h int) {
	clear(l.mem[l.base(h) : l.base(h)+logHeader])
	l.writeThrough(l.base(h), l.base(h)+logHeader)
}

func (l *markLog) start(h int, gen uint64) {
	b := l.mem[l.base(h):]
	copy(b, logMagic)
	binary.LittleEndian.PutUint64(b[8:16], gen)
	l.writeThrough(l.base(h), l.base(h)+logHeader)
	l.active, l.off, l.gen, l.genSum = h, logHeader, gen, genSum(gen)
}

// record appends key with mark m to the active half; false when it has no
// room left or the journal is closed.
func (l *markLog) record(key string, m dualwrite.Mark) bool {
	n := len(key)
	if n == 0 || n > 512 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.off+logRecordFixed+n > l.half {
		return false
	}
	b := l.mem[l.base(l.active)+l.off:]
	binary.LittleEndian.PutUint16(b[4:], uint16(n))
	b[6] = byte(m)
	copy(b[logRecordFixed:], key)
	binary.LittleEndian.PutUint32(b, crc32.Update(l.genSum, castagnoli, b[4:logRecordFixed+n]))
	at := l.base(l.active) + l.off
	l.writeThrough(at, at+logRecordFixed+n)
	l.off += logRecordFixed + n
	return true
}

// seal makes the other half active, unless a sealed half still waits for
// its commit (which then covers both).
func (l *markLog) seal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.sealed >= 0 {
		return
	}
	l.sealed = l.active
	l.start(1-l.active, l.gen+1)
}

// committed drops the sealed half: a commit covered its records.
func (l *markLog) committed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.sealed < 0 {
		return
	}
	l.drop(l.sealed)
	l.sealed = -1
}

func (l *markLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return errors.Join(unmapFile(l.mem), l.f.Close())
}

// reserve allocates f's size bytes on disk (fallocate) where the system
// can, writing only the first pages of each half, which records reach
// first (a store into a page never read or written faults for
// milliseconds); elsewhere it writes the whole file.
func reserve(f *os.File, size int) error {
	err := fallocate(f, size)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		_, err = f.WriteAt(make([]byte, size), 0)
		return err
	}
	for h := 0; h < 2 && err == nil; h++ {
		_, err = f.WriteAt(make([]byte, min(size/2, 64<<10)), int64(h*size/2))
	}
	return err
}
