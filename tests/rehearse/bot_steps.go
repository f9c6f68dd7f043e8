package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/command"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// deployAs deploys the bot with the flags of one row of the guide's table.
func (r *rig) deployAs(storage, dualWrite string, tee bool, extra map[string]string) error {
	vars := map[string]string{"STORAGE_PRIMARY": storage, "DUAL_WRITE": dualWrite, "DRIFT_VERIFIER": "0"}
	for k, v := range r.botVars {
		vars[k] = v
	}
	if tee {
		vars["KVSHADOW_TEE"] = "1"
	}
	for k, v := range extra {
		vars[k] = v
	}
	r.say("  deploy: STORAGE_PRIMARY=%s DUAL_WRITE=%s drift-verifier=%s tee=%v", storage, dualWrite, map[bool]string{true: "hourly", false: "stopped"}[vars["DRIFT_VERIFIER"] != "0"], tee)
	return r.bot.deploy(vars)
}

// today is the bot before the migration, as the real one runs: its own dual
// write on (STORAGE_PRIMARY=kv DUAL_WRITE=1, MONGODB_URI set), its
// drift-verifier hourly; then MongoDB unreachable for a while, so that its
// failed writes wait in its retry queue, as they do in production; and
// keys from long before.
func (r *rig) today(ctx context.Context) error {
	r.say("the bot as it runs today")
	for i := range 30 {
		k := fmt.Sprintf("wordle:stats:old%02d", i)
		if err := r.primary.Put(ctx, k, []byte(fmt.Sprintf(`{"played":%d}`, i)), kv.PutOptions{}); err != nil {
			return fmt.Errorf("seeding Workers KV: %w", err)
		}
		r.old = append(r.old, k)
	}
	r.say("  Workers KV holds 30 keys from before the bot's own dual write")
	if err := r.deployAs("kv", "1", false, map[string]string{"DRIFT_VERIFIER": "1"}); err != nil {
		return err
	}
	if err := r.burst(ctx, 16); err != nil {
		return err
	}
	r.say("  MongoDB out of the bot's reach for a while:")
	if err := r.deployAs("kv", "1", false, map[string]string{"DRIFT_VERIFIER": "1", "MONGODB_URI": "mongodb://" + r.down + "/", "MONGODB_SELECTION_TIMEOUT_MS": "300"}); err != nil {
		return err
	}
	if err := r.burst(ctx, 8); err != nil {
		return err
	}
	queued, err := r.list(ctx, command.Excluded)
	if err != nil {
		return err
	}
	if len(queued) == 0 {
		return errors.New("the bot's dual write queued nothing while MongoDB was out of reach")
	}
	r.say("  the bot's retry queue holds %d keys under %s", len(queued), command.Excluded)
	return nil
}

// list lists the keys of Workers KV under prefix, through the bridge.
func (r *rig) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for cursor := ""; ; {
		page, err := r.primary.List(ctx, kv.ListOptions{Prefix: prefix, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		keys = append(keys, page.Keys...)
		if page.Done {
			return keys, nil
		}
		cursor = page.Cursor
	}
}

// dualWriteOff is step 5's first deploy: the bot's own DualKVStore and its
// drift-verifier off, before the tee.
func (r *rig) dualWriteOff(ctx context.Context) error {
	var err error
	if r.docs, err = r.moduleDocuments(ctx); err != nil {
		return err
	}
	return r.deployAs("kv", "0", false, nil)
}

// checkDualWriteOff: the bot's updates no longer reach MongoDB by its own
// store.
func (r *rig) checkDualWriteOff(ctx context.Context) error {
	docs, err := r.moduleDocuments(ctx)
	if err != nil {
		return err
	}
	if docs != r.docs {
		return fmt.Errorf("the bot still writes MongoDB itself: its modules' collections went from %d to %d documents", r.docs, docs)
	}
	r.say("  the bot's own writes to MongoDB stopped: its modules' collections still hold %d documents", docs)
	return nil
}

// moduleDocuments counts the documents of the bot's module collections.
func (r *rig) moduleDocuments(ctx context.Context) (int64, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(r.mongoURI))
	if err != nil {
		return 0, err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database("miti99bot")
	var n int64
	for _, c := range []string{"wordle", "trading", "loldle_emoji"} {
		k, err := db.Collection(c).CountDocuments(ctx, bson.D{})
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// addTee is step 5's second deploy: the tee's line, the flags kept.
func (r *rig) addTee(context.Context) error {
	return r.deployAs("kv", "0", true, nil)
}

// deleteRetryQueue is step 6's last command pair (wrangler kv key list, then
// bulk delete): the queue, drained by the backfill's repair, deleted.
func (r *rig) deleteRetryQueue(ctx context.Context) error {
	keys, err := r.list(ctx, command.Excluded)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := r.primary.Delete(ctx, k); err != nil {
			return err
		}
	}
	r.say("  the bot's retry queue, drained by the repair from Workers KV: %d keys deleted", len(keys))
	return nil
}

// onProxy is the guide's recommended end state: the tee's line replaced by
// kvshadowBinding, the proxy in complete serving MongoDB.
func (r *rig) onProxy(context.Context) error {
	return r.deployAs("kv", "0", false, map[string]string{"KVSHADOW_BINDING": "1"})
}

// checkOnProxy: the bot, through the proxy, finds every key it ever wrote,
// and Workers KV is no longer written.
func (r *rig) checkOnProxy(ctx context.Context) error {
	if err := r.checkEveryKey("through kvshadowBinding and the proxy"); err != nil {
		return err
	}
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	if st.Summary.Operations == r.ops {
		return errors.New("the proxy served no call: the bot did not go through it")
	}
	r.ops = st.Summary.Operations
	return nil
}

// ownStore is step 13's deploy: the bot's own MongoKVStore, the tee gone.
func (r *rig) ownStore(context.Context) error {
	return r.deployAs("mongo", "0", false, nil)
}

// checkOwnStore: the bot, reading MongoDB through its own store, finds
// every key it ever wrote with the value it last wrote (a deleted one
// absent), and what Workers KV held before; it did not go through the
// proxy; and its new writes are in MongoDB only.
func (r *rig) checkOwnStore(ctx context.Context) error {
	if err := r.checkEveryKey("on its own MongoKVStore"); err != nil {
		return err
	}
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	if st.Summary.Operations != r.ops {
		return fmt.Errorf("the proxy served %d operations after the bot left it", st.Summary.Operations-r.ops)
	}
	behind := 0
	for k, want := range r.last {
		got, err := r.primary.Get(ctx, k)
		if want != nil && (err != nil || string(got) != *want) {
			behind++
		}
	}
	if behind == 0 {
		return errors.New("the bot did not write MongoDB directly: Workers KV holds every value it wrote at step 13")
	}
	r.say("  the proxy served no call since; Workers KV is behind on %d keys the bot wrote to MongoDB directly", behind)
	return nil
}

// checkEveryKey reads every key the bot wrote, and the keys from before,
// through the bot as deployed.
func (r *rig) checkEveryKey(how string) error {
	var keys []string
	var want []*string
	for k, v := range r.last {
		keys, want = append(keys, k), append(want, v)
	}
	present := append(slices.Clone(r.old), slices.Collect(maps.Keys(r.shared))...)
	got, err := r.bot.read(append(keys, present...))
	if err != nil {
		return err
	}
	var wrong []string
	for i, k := range keys {
		if (got[i] == nil) != (want[i] == nil) || (got[i] != nil && *got[i] != *want[i]) {
			wrong = append(wrong, k)
		}
	}
	for i, k := range present {
		if got[len(keys)+i] == nil {
			wrong = append(wrong, k)
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		return fmt.Errorf("the bot %s misses or reads otherwise %d keys it wrote: %s", how, len(wrong), strings.Join(wrong[:min(len(wrong), 5)], ", "))
	}
	r.say("  the bot, %s, reads every key it wrote: %d with the value it last wrote (deleted ones absent), %d written by several at once present, %d from before the migration", how, len(r.last), len(r.shared), len(r.old))
	return nil
}

// cleanup is step 14's list of kvshadow's collections to drop, as the guide
// gives it (TestPlanFollowsTheGuide); chunks, their generations and the
// default collection are dropped when empty, as the guide says.
var cleanup = []string{"kvshadow.control", "kvshadow.instances", "kvshadow.reports", "kvshadow.overflows"}

var dropWhenEmpty = []string{"kvshadow.chunks", "kvshadow.chunkgens", "kvshadow.default"}

// retire is step 14: the proxy stopped, kvshadow's collections dropped as
// the guide lists them; then no collection of kvshadow's is left.
func (r *rig) retire(ctx context.Context) error {
	r.stopProxy()
	r.admin = nil
	r.say("  kvshadow-proxy stopped")
	client, err := mongo.Connect(options.Client().ApplyURI(r.mongoURI))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database("miti99bot")
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	var dropped, left []string
	for _, n := range names {
		switch {
		case slices.Contains(cleanup, n):
		case slices.Contains(dropWhenEmpty, n):
			if c, err := db.Collection(n).CountDocuments(ctx, bson.D{}); err != nil || c > 0 {
				left = append(left, fmt.Sprintf("%s (%d documents)", n, c))
				continue
			}
		case strings.HasPrefix(n, "kvshadow.") || n == "__retry":
			left = append(left, n)
			continue
		default:
			continue
		}
		if err := db.Collection(n).Drop(ctx); err != nil {
			return err
		}
		dropped = append(dropped, n)
	}
	if len(left) > 0 {
		return fmt.Errorf("after the guide's cleanup, collections of kvshadow's remain: %s", strings.Join(left, ", "))
	}
	slices.Sort(dropped)
	r.say("  dropped %s; no collection of kvshadow's is left", strings.Join(dropped, ", "))
	return nil
}

// checkRetired: with the proxy gone, the bot still reads every key it wrote.
func (r *rig) checkRetired(context.Context) error {
	return r.checkEveryKey("on its own MongoKVStore with the proxy stopped")
}
