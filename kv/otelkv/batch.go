package otelkv

import "context"

// A duration is one operation's, held in the store's batch until it is
// recorded (see package metricbatch: a batch pays for the SDK's cold
// memory once, where each record would pay for it).
type duration struct {
	op      op
	outcome outcome
	seconds float64
}

// hold batches d, recording the batch when d filled it; the SDK is called
// with no lock held.
func (in *instruments) hold(d duration) {
	if full := in.batch.Add(d); full != nil {
		in.flush(full)
	}
}

// flush records the durations ds into the histogram and recycles ds.
func (in *instruments) flush(ds []duration) {
	for _, d := range ds {
		in.dur.Record(context.Background(), d.seconds, in.rec[d.op][d.outcome]...)
	}
	in.batch.Recycle(ds)
}
