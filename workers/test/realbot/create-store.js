// The bot's createStore in its shape: a module's prefixed view over the
// store its flags pick.
//
//   STORAGE_PRIMARY  DUAL_WRITE  MONGODB_URI  store
//   kv (default)     1 (default) set          DualKVStore(CFKVStore, MongoKVStore)
//   kv               0           any          CFKVStore
//   mongo            1           set          DualKVStore(MongoKVStore, CFKVStore)
//   mongo            0           set          MongoKVStore
//   any              any         unset        CFKVStore
//
// Like the bot's, it refuses to build any store without env.KV.
import { CFKVStore } from "../seed/cf-kv-store.js";
import { DualKVStore } from "./dual-kv-store.js";
import { MongoKVStore } from "./mongo-kv-store.js";

/** @param {string} prefix @param {any} base */
function withPrefix(prefix, base) {
  return {
    get: (/** @type {string} */ k) => base.get(prefix + k),
    put: (/** @type {string} */ k, /** @type {string} */ v, /** @type {any} */ o) => base.put(prefix + k, v, o),
    delete: (/** @type {string} */ k) => base.delete(prefix + k),
    getJSON: (/** @type {string} */ k) => base.getJSON(prefix + k),
    putJSON: (/** @type {string} */ k, /** @type {any} */ v, /** @type {any} */ o) => base.putJSON(prefix + k, v, o),
    async list(/** @type {any} */ opts = {}) {
      const r = await base.list({ prefix: prefix + (opts.prefix ?? ""), limit: opts.limit, cursor: opts.cursor });
      return { keys: r.keys.map((/** @type {string} */ k) => (k.startsWith(prefix) ? k.slice(prefix.length) : k)), cursor: r.cursor, done: r.done };
    },
  };
}

/** @param {string} moduleName @param {any} env */
export function createStore(moduleName, env) {
  if (!/^[a-z0-9_-]+$/.test(moduleName)) throw new Error(`createStore: invalid moduleName "${moduleName}"`);
  if (!env?.KV) throw new Error("createStore: env.KV binding is missing");
  const prefix = `${moduleName}:`;
  const collection = moduleName.replace(/-/g, "_");
  if (!env.MONGODB_URI) return withPrefix(prefix, new CFKVStore(env.KV));
  const primary = (env.STORAGE_PRIMARY ?? "kv").toLowerCase();
  const dual = (env.DUAL_WRITE ?? "1") !== "0";
  if (primary === "mongo" && !dual) return withPrefix(prefix, new MongoKVStore(env, collection));
  const cf = new CFKVStore(env.KV);
  const mongo = new MongoKVStore(env, collection);
  if (primary === "mongo") return withPrefix(prefix, new DualKVStore(mongo, cf, env.KV));
  if (!dual) return withPrefix(prefix, cf);
  return withPrefix(prefix, new DualKVStore(cf, mongo, env.KV));
}
