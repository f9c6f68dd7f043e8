// Package workers holds only tests: the kv conformance suite through cfkv
// (cloudflare-go v6) against the bridge Worker of workers/bridge running in
// workerd through miniflare, so that the contract is proven against
// Cloudflare's own simulator of Workers KV and not only against the
// project's emulator; the bot Worker end to end in tee and proxy mode; and
// the flip under traffic, shadow to handover to live and back, with three
// tee isolates (TestFlipUnderTrafficLosesNothing). They need Node and the package's node_modules
// (`npm ci` in workers/, which `make test` runs first).
package workers
