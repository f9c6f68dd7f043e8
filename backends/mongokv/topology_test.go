package mongokv

import "testing"

// TestShortTopology: an error names its cause in one short line, never the
// driver's description of every server.
func TestShortTopology(t *testing.T) {
	for in, want := range map[string]string{
		"server selection error: context deadline exceeded, current topology: { Type: Unknown, Servers: [{ Addr: 127.0.0.1:1, Type: Unknown, Last error: dial tcp 127.0.0.1:1: connect: connection refused }, ] }": "server selection error: context deadline exceeded (last error: dial tcp 127.0.0.1:1: connect: connection refused)",
		"server selection error: context deadline exceeded, current topology: { Type: Unknown, Servers: [] } (after)":                                                                                              "server selection error: context deadline exceeded (after)",
		"no dump here": "no dump here",
		"cut short, current topology: { Type: { x": "cut short",
	} {
		if got := ShortTopology(in); got != want {
			t.Errorf("ShortTopology(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
