// Command rehearse is `make rehearse`: the bot team's guide
// (docs/bot-guide.md) on one machine, each step as the guide writes it and
// what it does checked (its -help says how, run.go's plan lists the steps).
// It exits non-zero if the stores end apart, a divergence was confirmed
// (none is injected, so any would be made up), the bot misses a key it
// wrote, or a step failed; its reports stay in -dir.
package main

import "github.com/kvshadow/kvshadow/tests/command"

func main() { command.Main("rehearse", run) }
