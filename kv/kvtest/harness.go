package kvtest

import (
	"cmp"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Harness is what a backend gives the suite.
type Harness struct {
	// New returns an empty store for one subtest. Cleanup belongs in
	// t.Cleanup.
	New func(t *testing.T) kv.Store
	// Advance moves the store's clock forward. Nil means the store runs on
	// real time, and expiry checks sleep.
	Advance func(d time.Duration)
	// Now reads the store's clock; nil means time.Now. A store whose clock
	// Advance moves must give it.
	Now func() time.Time
	// PageKeys is how many keys the pagination test writes under one
	// prefix; it must exceed kv.MaxListLimit so that the largest limits
	// span pages. Zero means 1001.
	PageKeys int
	// Writers is the number of concurrent writers; zero means 8.
	Writers int
	// ListsInfo says that the store lists each key's expiry and metadata
	// with the key (kv.ListResult.Info; see the package doc); without it the
	// suite checks Info only where the store gives it.
	ListsInfo bool
}

func (h Harness) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h Harness) wait(d time.Duration) {
	if h.Advance != nil {
		h.Advance(d)
		return
	}
	time.Sleep(d)
}

// Run runs the whole suite against h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("kvtest: Harness.New is nil")
	}
	if h.Advance != nil && h.Now == nil {
		t.Fatal("kvtest: Harness.Advance is set but Now is not")
	}
	h.PageKeys = cmp.Or(h.PageKeys, kv.MaxListLimit+1)
	h.Writers = cmp.Or(h.Writers, 8)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

// cases is the table: each entry is one behaviour of the contract.
var cases = []testCase{
	{"MissingKey", testMissingKey},
	{"RoundTrip", testRoundTrip},
	{"LargestValue", testLargestValue},
	{"Overwrite", testOverwrite},
	{"CallerBuffers", testCallerBuffers},
	{"Expiry", testExpiry},
	{"ExpiryReported", testExpiryReported},
	{"DeleteIsIdempotent", testDelete},
	{"ListOrder", testListOrder},
	{"ListPrefix", testListPrefix},
	{"Pagination", testPagination},
	{"ConcurrentWriters", testConcurrentWriters},
	{"InvalidInput", testInvalidInput},
	{"JSON", testJSON},
	{"MalformedJSON", testMalformedJSON},
	{"Namespaces", testNamespaces},
	{"Bulk", testBulk},
	{"Metadata", testMetadata},
	{"ListInfo", testListInfo},
	{"MetadataBulk", testMetadataBulk},
}
