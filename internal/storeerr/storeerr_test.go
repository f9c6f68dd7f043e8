package storeerr

import "testing"

func TestWithoutTopology(t *testing.T) {
	for in, want := range map[string]string{
		`report: shadow list: kv: mongodb unavailable (retry after 5s): mongokv: list: server selection error: context deadline exceeded, current topology: { Type: Unknown, Servers: [{ Addr: 127.0.0.1:1, Type: Unknown, Last error: dial tcp 127.0.0.1:1: connect: connection refused }, ] } (the 200 keys committed are in the checkpoint)`: `report: shadow list: kv: mongodb unavailable (retry after 5s): mongokv: list: server selection error: context deadline exceeded (the 200 keys committed are in the checkpoint)`,
		"no dump here": "no dump here",
		"cut short, current topology: { Type: { x": "cut short",
	} {
		if got := WithoutTopology(in); got != want {
			t.Errorf("WithoutTopology(%q)\n = %q\nwant %q", in, got, want)
		}
	}
	for _, c := range []struct{ uri, want string }{
		{"mongodb://user:p@ss@db1:27017,db2:27017/bot?tls=true", "db1:27017,db2:27017"},
		{"mongodb+srv://u:SECRET@cluster0.example.net/", "cluster0.example.net"},
		{"not a uri", "the URI in MONGODB_URI"},
	} {
		if got := MongoHosts(c.uri); got != c.want {
			t.Errorf("MongoHosts(%q) = %q, want %q", c.uri, got, c.want)
		}
	}
}
