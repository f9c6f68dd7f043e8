// The bot's hourly drift-verifier in its shape: it replays the retry queue
// (each __retry:mongo-failed:<key>:<id> entry: the key's value read from
// Workers KV, written to MongoDB, the entry deleted) and compares the first
// 50 keys of each module. It writes MongoDB by itself, which is why the
// guide stops it together with DUAL_WRITE before the tee is added.
import { RETRY_PREFIX } from "./dual-kv-store.js";
import { MongoKVStore } from "./mongo-kv-store.js";

const MODULES = ["wordle", "trading", "loldle-emoji"];

/** @param {any} env */
export async function runDriftVerifier(env) {
  const raw = env.KV;
  let drained = 0;
  let drift = 0;
  for (let cursor; ; ) {
    const page = await raw.list({ prefix: RETRY_PREFIX, cursor });
    for (const { name } of page.keys) {
      const key = name.slice(RETRY_PREFIX.length).replace(/:[^:]*$/, "");
      const store = new MongoKVStore(env, key.split(":")[0].replace(/-/g, "_"));
      const value = await raw.get(key);
      if (value === null) await store.delete(key);
      else await store.put(key, value);
      await raw.delete(name);
      drained++;
    }
    if (page.list_complete) break;
    cursor = page.cursor;
  }
  for (const m of MODULES) {
    const store = new MongoKVStore(env, m.replace(/-/g, "_"));
    const page = await raw.list({ prefix: `${m}:`, limit: 50 });
    for (const { name } of page.keys) if ((await raw.get(name)) !== (await store.get(name))) drift++;
  }
  console.log(JSON.stringify({ event: "drift_verifier", drained, drift }));
}
