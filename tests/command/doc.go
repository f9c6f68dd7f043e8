// Package command is what the tests module's commands, rehearse and
// tee-check, share: their main and flag parsing (a usage mistake exits 2, a
// failure 1), and the local kvshadow-proxy they run: its flags, its stage
// moves and the wait for its keys to settle.
package command
