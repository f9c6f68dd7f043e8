package storeerr

import "testing"

func TestMongoHosts(t *testing.T) {
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
