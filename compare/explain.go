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

// Explain returns what k means and what to do about it; an unknown kind
// gets an explanation that says so.
func Explain(k Kind) Explanation {
	if e, ok := explanations[k]; ok {
		return e
	}
	return Explanation{Meaning: "a kind this version does not know", Action: "upgrade the tool that reads it"}
}
