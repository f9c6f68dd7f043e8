// Package help holds the test that runs the examples of the commands'
// --help texts, as printed, wherever they can run on one machine.
package help
