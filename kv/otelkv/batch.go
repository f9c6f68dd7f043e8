package otelkv

import "context"

// A duration is one operation's, held in the store's batch until it is
// recorded (package metricbatch).
type duration struct {
	op      op
	outcome outcome
	seconds float64
}

// recordDurations records a batch of durations into the histogram; it is
// instruments.record, made once, so that handing it to the batch costs no
// closure a call.
func (in *instruments) recordDurations(ds []duration) {
	for _, d := range ds {
		in.dur.Record(context.Background(), d.seconds, in.rec[d.op][d.outcome]...)
	}
}
