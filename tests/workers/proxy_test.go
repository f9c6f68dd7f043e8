package workers_test

import (
	"bytes"
	"context"
	"maps"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// startProxy runs kvshadow-proxy in-process over env, on free loopback
// ports, and returns its REST API root and admin URL.
func startProxy(t *testing.T, env map[string]string, args ...string) (api, adminURL string) {
	t.Helper()
	return startProxyOn(t, nil, env, args...)
}

// startProxyOn is startProxy serving its front on front (reserve's) when
// front is not nil.
func startProxyOn(t *testing.T, front net.Listener, env map[string]string, args ...string) (api, adminURL string) {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--instance", t.Name()}, args...)
	logs := &syncbuf.Buffer{} // the proxy's log, kept for a failing test
	at, stop, err := proxytest.Run(context.Background(), env, logs, args, service.WithListener(front))
	if err != nil {
		t.Fatalf("kvshadow-proxy did not start: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("kvshadow-proxy: %v", err)
		}
		if t.Failed() { // the proxy's log, for the failing run only
			t.Logf("kvshadow-proxy %v logged:\n%s", args, logs.String())
		}
	})
	return at.API, at.Admin
}

// TestProxyBindingEndToEnd: a bot Worker in workerd uses the seed's
// createStore over kvshadowBinding; kvshadow-proxy (stage dualwrite) writes
// the primary through the bridge Worker's binding and copies to the
// embedded MongoDB-compatible server; afterwards, with every key settled,
// MongoDB holds exactly what the binding holds.
func TestProxyBindingEndToEnd(t *testing.T) {
	mongo := mongotest.New(t)
	b := startBridge(t)
	db := mongo.Database(t)
	const account, namespace = "bridge-account", "bridge-namespace"
	clientToken, adminToken := newToken(), newToken()
	api, adminURL := startProxy(t, map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": b.Token,
		"CLOUDFLARE_BASE_URL": b.URL, "MONGODB_URI": mongo.URI(), "MONGODB_DB": db,
		"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken,
	}, "--stage", "dualwrite", "--consistency-window", "0")

	const updates = 60
	bot := startNode(t, "run-bot.js", []string{
		"KVSHADOW_MODE=binding", "KVSHADOW_URL=" + api, "KVSHADOW_TOKEN=" + clientToken,
		"KVSHADOW_ACCOUNT=" + account, "KVSHADOW_NAMESPACE=" + namespace, "KVSHADOW_UPDATES=" + strconv.Itoa(updates),
	})
	var ready struct{}
	bot.next(&ready, 3*time.Minute)
	bot.say("go")
	var run struct {
		Writes      int `json:"writes"`
		Invocations int `json:"invocations"`
	}
	bot.next(&run, 5*time.Minute)

	primary := b.store(t)
	shadow := shadowStore(t, mongo, db)
	want := converged(t, &admin.Client{URL: adminURL, Token: adminToken}, primary, shadow, 0)
	if len(want) < 10 {
		t.Fatalf("the traffic left only %d keys", len(want))
	}
	t.Logf("%d invocations, %d writes through the proxy, %d keys on both sides", run.Invocations, run.Writes, len(want))
}

// converged waits until the proxy has nothing dirty or queued and the
// shadow holds exactly what the primary holds, values and expiries (within
// slack), and returns the primary's keys.
func converged(t *testing.T, adm *admin.Client, primary, shadow kv.Store, slack time.Duration) map[string]kv.Entry {
	t.Helper()
	var want, got map[string]kv.Entry
	same := until(time.Minute, func() bool {
		st, err := adm.Stats(context.Background())
		if err != nil {
			t.Fatalf("GET /stats: %v", err)
		}
		if st.Total.Dirty != 0 || st.Total.Queued != 0 {
			return false
		}
		want, got = everything(t, primary), everything(t, shadow)
		return maps.EqualFunc(want, got, func(w, g kv.Entry) bool {
			return bytes.Equal(w.Value, g.Value) && w.Expiration.IsZero() == g.Expiration.IsZero() && g.Expiration.Sub(w.Expiration).Abs() <= slack
		})
	})
	if !same {
		t.Fatalf("MongoDB never held what the binding holds: %d keys in the binding, %d in MongoDB", len(want), len(got))
	}
	return want
}
