package workers_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// flipWorld is what the tests over run-flip.js share: the embedded
// MongoDB-compatible server and a database of the test's, the bot isolates
// in workerd with the tee pointed at a proxy URL, the bridge Worker over
// their KV binding, and kvshadow-proxy's environment with the bridge as its
// primary and that database as its shadow.
type flipWorld struct {
	mongo                   *mongotest.Server
	db                      string
	node                    *nodeScript
	bridge                  bridge // the primary: the bridge Worker, its account and namespace
	clientToken, adminToken string
	env                     map[string]string
}

// newFlipWorld starts run-flip.js with its tee at proxyURL, named after
// name (its account "name-account", its namespace "name-namespace"), vars
// added to its environment.
func newFlipWorld(t *testing.T, name, proxyURL string, vars ...string) *flipWorld {
	w := &flipWorld{mongo: mongotest.New(t), clientToken: newToken(), adminToken: newToken()}
	w.db = w.mongo.Database(t)
	w.bridge = bridge{Account: name + "-account", Namespace: name + "-namespace", Token: newToken()}
	w.node = startNode(t, "run-flip.js", append([]string{
		"KVSHADOW_URL=" + proxyURL, "KVSHADOW_TOKEN=" + w.clientToken, "KVSHADOW_NAMESPACE=" + w.bridge.Namespace,
		"KVSHADOW_BRIDGE_TOKEN=" + w.bridge.Token,
	}, vars...))
	var ready struct {
		Bridge string `json:"bridge"`
	}
	w.node.next(&ready, 3*time.Minute)
	w.bridge.URL = ready.Bridge
	w.env = map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": w.bridge.Account, "CLOUDFLARE_KV_NAMESPACE_ID": w.bridge.Namespace, "CLOUDFLARE_API_TOKEN": w.bridge.Token,
		"CLOUDFLARE_BASE_URL": w.bridge.URL, "MONGODB_URI": w.mongo.URI(), "MONGODB_DB": w.db,
		"KVSHADOW_TOKEN": w.clientToken, "KVSHADOW_ADMIN_TOKEN": w.adminToken,
	}
	return w
}
