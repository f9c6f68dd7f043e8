// Package budget caps the requests a process makes to a store with a
// request budget: at most Requests in any window of Per, kept exactly as a
// sliding window (Workers KV counts its account API limit, 1,200 requests
// per 5 minutes, per window; a token bucket would allow twice that in the
// first window, its burst plus its refill).
//
// One *Limiter is shared by everything in a process that spends the same
// budget: shadow-report's scan and repair, and the dual-write store's
// verification and repair reads. Background work waits on it (Wait) or
// gives up its turn (TryTake); a caller's own requests never wait on it.
// A store that asked to be left alone (Retry-After) pauses every user of
// the Limiter at once (Pause).
package budget
