// Command tee-check is `make tee-check BOT=path/to/bot`: the bot team's
// local check of the tee, as production runs it, which docs/bot-guide.md
// (step 5) describes and -help sums up: the user's Worker in `wrangler dev`
// (under workers/teecheck/entry.js, which watches each invocation's writes to
// its binding), the bridge over the same local KV data, kvshadow-proxy at the
// bridge and the embedded MongoDB-compatible server; on Ctrl-C the verdict.
// It exits 1 if a divergence was confirmed or a handler wrote around the tee
// (each key and handler named), and 2 on a usage mistake.
package main

import "github.com/kvshadow/kvshadow/tests/command"

func main() { command.Main("tee-check", run) }
