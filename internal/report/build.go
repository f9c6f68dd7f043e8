package report

import "github.com/kvshadow/kvshadow/compare"

// report assembles the Report from the committed state.
func (e *engine) report() *Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	reqs := e.requests()
	r := &Report{
		Schema:        SchemaName,
		SchemaVersion: SchemaVersion,
		RunID:         e.cfg.RunID,
		StartedAt:     e.startedAt,
		FinishedAt:    e.cfg.Clock.Now(),
		Resumed:       e.resumed,
		Primary:       SideInfo{Name: e.primary.name, Budget: e.primary.budget.String(), Requests: reqs[0], Expiries: e.primary.expiries()},
		Shadow:        SideInfo{Name: e.shadow.name, Budget: e.shadow.budget.String(), Requests: reqs[1], Expiries: e.shadow.expiries()},
		Scope:         e.cfg.Scope,
		Options: Options{
			TTLToleranceSeconds: orDefault(e.cfg.TTLTolerance, compare.DefaultTTLTolerance).Seconds(),
			KeyPolicy:           e.cfg.KeyPolicy,
			ExpiriesCompared:    e.expiries,
			MinParity:           e.cfg.MinParity,
			StableHashes:        e.cfg.KeyPolicy == compare.KeyHMAC && len(e.cfg.Secret) > 0,
		},
		Truth:              e.truth(),
		Modules:            sortedModules(e.Modules),
		Divergences:        append(e.Records[:0:0], e.Records...),
		DivergencesOmitted: e.Omitted,
		BinaryInShadow:     append(e.Binary[:0:0], e.Binary...),
		BinaryOmitted:      e.BinOmitted,
		TooLargeForBot:     append(e.Large[:0:0], e.Large...),
		TooLargeOmitted:    e.LargeOmit,
	}
	for _, m := range r.Modules {
		r.Totals.add(&m.Counts)
	}
	r.Totals.finish()
	r.Totals.Excluded = e.Excluded
	agree := r.Totals.agreeing()
	r.Parity = r.Totals.Parity
	gated := r.Totals.Compared
	if e.settled != nil {
		// The keys left for later are judged by a later run, not this one.
		r.Settle, r.LeftForLater = e.settled, append([]LeftKey(nil), e.left...)
		gated -= e.settled.Left
		r.Parity = parity(agree, gated)
	}
	if e.cfg.Repair.Enabled {
		t := e.Repair
		rep := &RepairReport{
			Applied: e.cfg.Repair.Apply, Authoritative: e.cfg.Repair.Authoritative,
			RepairCounts: t, ParityAfter: r.Parity,
		}
		rep.After = newKindCounts().add(t.After)
		if rep.Applied {
			agree += t.Verified
			rep.ParityAfter = parity(agree, gated)
			r.Parity = rep.ParityAfter
		}
		r.Repair = rep
	}
	r.Passed = passes(agree, gated, e.cfg.MinParity) || r.authority() == compare.ShadowAlone
	return r
}
