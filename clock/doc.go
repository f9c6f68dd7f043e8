// Package clock lets time be injected: production code takes a Clock, tests
// pass a *Fake and move it forward instead of sleeping.
package clock
