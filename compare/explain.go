package compare

// Explanation is what a kind means to an operator, in one line each: what
// the two stores hold, and what to do about it. Reports print it beside
// every kind they show, so that a reader needs no other document.
type Explanation struct {
	Meaning string `json:"meaning"`
	Action  string `json:"action"`
}

// explanations hold one line each; the runbook's table and the report's
// schema documentation say the same (a test holds them to it).
var explanations = map[Kind]Explanation{
	Match: {"both stores hold the same value, expiry and metadata (or neither holds the key)",
		"nothing"},
	MissingInShadow: {"Workers KV has the key, MongoDB does not: a copy never arrived, or the key predates the backfill",
		"repair (shadow-report --repair --apply copies it); many of them before the backfill is expected"},
	ExtraInShadow: {"MongoDB has a key Workers KV does not: a delete did not reach MongoDB, or something wrote MongoDB directly",
		"repair (deletes it from MongoDB); if it comes back, find what writes MongoDB around the layer"},
	ValueMismatch: {"both stores have the key with different values: a copy was lost, or a writer went around the layer",
		"repair; if the same keys come back, find the other writer before the flip"},
	JSONEquivalent: {"the same JSON with other bytes (key order, spacing): the bot's getJSON reads them alike",
		"harmless for JSON readers; repair to make the bytes equal"},
	TTLMismatch: {"the same value, expiries further apart than the tolerance, or an expiry on one side only",
		"repair (copies the expiry); if it recurs, a writer sets expiries otherwise"},
	MetadataMismatch: {"the same value and expiry, different Workers KV metadata (the bot never sets it; REST clients may)",
		"repair (copies the metadata)"},
	ExpiredOnOneSide: {"one store dropped the key a moment before the other would: clocks, not data",
		"nothing; it counts as agreeing"},
	PrimaryError: {"Workers KV could not be read, so nothing is known of the key",
		"check the error class, the token and the API budget, then run again"},
	ShadowError: {"MongoDB could not be read, so nothing is known of the key",
		"check MongoDB's reachability and the user's roles, then run again"},
	Pending: {"written inside Workers KV's consistency window (about 60 s), or a repair of it is under way",
		"look again after the window; not a divergence"},
	Inconclusive: {"a newer write of the key raced the comparison",
		"nothing; the next comparison of the key decides"},
	Suspected: {"a read differed, and the same difference has not yet held for a whole consistency window",
		"wait for verification: it becomes a divergence (the same difference a window later) or goes away"},
}

// Authority is which store the advice takes as the truth, as the stage
// says: what a repair copies from, and what a difference means.
type Authority uint8

const (
	// PrimaryAuthority: Workers KV is authoritative and MongoDB its copy
	// (off to handover).
	PrimaryAuthority Authority = iota
	// ShadowAuthority: MongoDB is authoritative and Workers KV its copy
	// (live, rampdown).
	ShadowAuthority
	// ShadowAlone: MongoDB alone is written (complete); Workers KV falls
	// behind, as expected.
	ShadowAlone
)

// shadowTruth replaces the kinds whose meaning and repair turn round when
// MongoDB is authoritative.
var shadowTruth = map[Kind]Explanation{
	MissingInShadow: {"Workers KV has a key MongoDB (authoritative) does not: a delete's copy did not reach Workers KV, or something wrote Workers KV around the proxy",
		"repair (deletes it from Workers KV); if it comes back, find what writes Workers KV around the proxy"},
	ExtraInShadow: {"MongoDB (authoritative) has a key Workers KV does not: its copy to Workers KV never arrived",
		"repair (copies it into Workers KV), which the way back needs"},
	ValueMismatch: {"both stores have the key with different values: a copy to Workers KV was lost, or a writer went around the proxy",
		"repair (copies MongoDB's value into Workers KV); if the same keys come back, find the other writer"},
}

// behind is every difference's advice after complete.
const behind = "nothing: after complete Workers KV is no longer written and falls behind MongoDB, as expected (a repair would copy MongoDB over it, which nothing reads)"

// Explain returns what k means and what to do about it, a being the store
// taken as the truth; an unknown kind gets an explanation that says so.
func Explain(k Kind, a Authority) Explanation {
	e, ok := explanations[k]
	if !ok {
		return Explanation{Meaning: "a kind this version does not know", Action: "upgrade the tool that reads it"}
	}
	if s, ok := shadowTruth[k]; ok && a != PrimaryAuthority {
		e = s
	}
	if a == ShadowAlone && (k.Divergent() || k == PrimaryError) {
		e.Action = behind
	}
	return e
}
