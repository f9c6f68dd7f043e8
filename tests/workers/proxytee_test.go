package workers_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// reserve binds a loopback port for a proxy that starts later (startProxyOn)
// and holds it until then: the Workers learn the proxy's origin when they
// start, before the proxy can (it needs their bridge's URL), and no other
// process can take the port meanwhile, as one could a port picked, closed
// and bound again (wrangler's "The Workers runtime failed to start").
func reserve(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// TestTeeThroughProxyEndToEnd: the whole tee path with the real service: a
// bot Worker in workerd writes its own binding through the tee; its copies
// go to kvshadow-proxy's tee endpoints; the proxy (stage shadow) reads
// the primary through the bridge Worker over that same binding and copies
// to the embedded MongoDB-compatible server, and compares the tee's sampled
// reads with it; afterwards MongoDB holds exactly what the binding holds,
// and no sampled read was a divergence.
func TestTeeThroughProxyEndToEnd(t *testing.T) {
	mongo := mongotest.New(t)
	db := mongo.Database(t)
	const account, namespace = "bridge-account", "bridge-namespace"
	clientToken, adminToken, bridgeToken := newToken(), newToken(), newToken()
	front := reserve(t) // the bot must know the proxy's origin when it starts

	const updates = 120
	bot := startNode(t, "run-bot.js", []string{
		"KVSHADOW_MODE=tee", "KVSHADOW_URL=http://" + front.Addr().String(), "KVSHADOW_TOKEN=" + clientToken,
		"KVSHADOW_NAMESPACE=" + namespace, "KVSHADOW_BRIDGE_TOKEN=" + bridgeToken, "KVSHADOW_UPDATES=" + strconv.Itoa(updates),
	})
	var ready struct {
		Bridge string `json:"bridge"`
	}
	bot.next(&ready, 3*time.Minute)
	_, adminURL := startProxyOn(t, front, map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": bridgeToken,
		"CLOUDFLARE_BASE_URL": ready.Bridge, "MONGODB_URI": mongo.URI(), "MONGODB_DB": db,
		"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken,
	}, "--stage", "shadow", "--consistency-window", "0")
	bot.say("go")
	var run struct {
		Writes      int `json:"writes"`
		Invocations int `json:"invocations"`
	}
	bot.next(&run, 5*time.Minute)

	primary := bridge{URL: ready.Bridge, Account: account, Namespace: namespace, Token: bridgeToken}.store(t)
	shadow := shadowStore(t, mongo, db)
	// A TTL's expiry is computed by the tee when the binding acknowledges
	// the write: within a second of the binding's.
	adm := &admin.Client{URL: adminURL, Token: adminToken}
	want := converged(t, adm, primary, shadow, time.Second)
	if len(want) < 20 {
		t.Fatalf("the traffic left only %d keys", len(want))
	}
	st, err := adm.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := st.Total.Comparisons
	// Every read may race a write of its own invocation (inconclusive);
	// TestTeeEndToEnd's changedBehind shows a match and a difference found.
	if st.Total.TeeReads == 0 || st.Total.Divergences != 0 {
		t.Fatalf("sampled reads: %d compared, comparisons %v, %d divergences", st.Total.TeeReads, c, st.Total.Divergences)
	}
	t.Logf("%d invocations, %d writes teed through the proxy, %d keys on both sides; %d sampled reads compared: %d match, %d suspected, %d inconclusive, %d pending",
		run.Invocations, run.Writes, len(want), st.Total.TeeReads, c["match"], c["suspected"], c["inconclusive"], c["pending"])
}

// The origin handed to the Workers before the proxy starts stays the
// proxy's: another process that would bind it meanwhile (a workerd, a
// wrangler dev of another test, here the test itself) is refused, and the
// proxy serves there.
func TestTheProxysOriginCannotBeTakenBeforeItStarts(t *testing.T) {
	front := reserve(t)
	origin := "http://" + front.Addr().String()
	if thief, err := net.Listen("tcp", front.Addr().String()); err == nil {
		t.Cleanup(func() { _ = thief.Close() })
		t.Errorf("another process bound %s, the proxy's origin, before the proxy started", origin)
	}
	mongo := mongotest.New(t)
	api, _ := startProxyOn(t, front, proxytest.NewPrimary(t).Environment(mongo.URI(), mongo.Database(t)), "--stage", "dualwrite")
	if !strings.HasPrefix(api, origin+"/") {
		t.Fatalf("the proxy serves at %s, not at the origin the Workers were given, %s", api, origin)
	}
	resp, err := http.Get(api)
	if err != nil {
		t.Fatalf("the proxy's origin: %v", err)
	}
	resp.Body.Close()
}
