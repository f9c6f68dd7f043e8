// Package kvtest is the conformance suite of the kv contract: one table of
// behaviours, taken from the seeds, that every backend runs against itself
// through its real client. Passing it is what "zero behavioural difference"
// between backends means.
//
// A backend's test calls Run with a Harness:
//
//	func TestConformance(t *testing.T) {
//		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
//		kvtest.Run(t, kvtest.Harness{
//			New:     func(t *testing.T) kv.Store { return memory.New(memory.Config{Clock: clk}) },
//			Advance: clk.Advance,
//			Now:     clk.Now,
//		})
//	}
//
// A backend that cannot have its clock moved (a remote service) leaves
// Advance nil and gets the slower variant, which waits out expiries in real
// time; nothing is skipped. A backend that lists each key's expiry and
// metadata with it (kv.ListResult.Info: memory, cfkv, mongokv) sets
// ListsInfo, so that a listing without them fails rather than passes as a
// store that lists none.
package kvtest
