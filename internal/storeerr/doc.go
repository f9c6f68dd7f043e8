// Package storeerr words a store's failure in one line: what failed, the
// likely cause and what to check, without the SDK's wrapping or the MongoDB
// driver's topology dump. shadow-report's preflight and kvshadow-proxy's
// start and readiness say the same thing of the same failure through it.
//
// It sits below both commands and imports only the stores' own packages
// (kv, cfkv), never a command's.
package storeerr
