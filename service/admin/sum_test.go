package admin

import (
	"reflect"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Every count of Stats adds up in Sum, so that a field added to Stats
// cannot go missing from /stats and /metrics' totals unnoticed; and Sum
// leaves the snapshots it is given as they were.
func TestSumAddsEveryCount(t *testing.T) {
	one := func() dualwrite.Stats {
		var st dualwrite.Stats
		v := reflect.ValueOf(&st).Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.CanInt() {
				f.SetInt(1)
			} else if f.CanUint() && f.Kind() != reflect.Uint8 { // Stage is a uint8
				f.SetUint(1)
			}
		}
		st.Drops = map[dualwrite.DropReason]uint64{dualwrite.DropLaneFull: 1}
		st.Repairs = map[dualwrite.RepairOutcome]uint64{dualwrite.RepairCopied: 1}
		st.Comparisons = map[compare.Kind]uint64{compare.Match: 1}
		st.Verifications = map[compare.Kind]uint64{compare.Match: 1}
		st.IngestRefused = map[dualwrite.IngestRefusal]uint64{dualwrite.RefusedAckedPast: 1}
		st.LateCopies = map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 1}
		st.Fence.IngestUnverified = 1
		return st
	}
	first := one()
	sum := Sum(first, one())
	if first.Drops[dualwrite.DropLaneFull] != 1 || first.Comparisons[compare.Match] != 1 {
		t.Fatal("Sum changed the maps of the first snapshot")
	}
	v := reflect.ValueOf(sum)
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		var n int64 = -1
		switch {
		case f.CanInt():
			n = f.Int()
		case f.CanUint() && f.Kind() != reflect.Uint8:
			n = int64(f.Uint())
		case f.Kind() == reflect.Map && f.Type().Elem().Kind() == reflect.Uint64:
			for _, k := range f.MapKeys() {
				n = int64(f.MapIndex(k).Uint())
			}
		default:
			continue
		}
		want := int64(2)
		switch name {
		case "MaxLaneDepth", "LaneCapacity": // the fullest lane; each lane's capacity
			want = 1
		}
		if n != want {
			t.Errorf("Sum: %s = %d, want %d", name, n, want)
		}
	}
	if sum.Fence.IngestUnverified != 2 {
		t.Errorf("Sum: Fence.IngestUnverified = %d, want 2", sum.Fence.IngestUnverified)
	}
}

// The summary counts every late copy, whatever its outcome, and the
// conflicts among them.
func TestSummaryCountsLateCopies(t *testing.T) {
	total := dualwrite.Stats{LateCopies: map[dualwrite.LateOutcome]uint64{}}
	for _, o := range dualwrite.LateOutcomes {
		total.LateCopies[o] = 2
	}
	s := summaryOf(control.Status{}, total, Operations{})
	if want := uint64(2 * len(dualwrite.LateOutcomes)); s.LateCopies != want || s.Conflicts != 2 {
		t.Fatalf("summary late copies %d, conflicts %d; want %d and 2", s.LateCopies, s.Conflicts, want)
	}
}
