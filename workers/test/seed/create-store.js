// The bot's createStore, as written in its plan (seed phase-03), unchanged.
import { CFKVStore } from "./cf-kv-store.js";

/**
 * @param {string} moduleName
 * @param {{KV: KVNamespace}} env
 */
export function createStore(moduleName, env) {
  if (!/^[a-z0-9_-]+$/.test(moduleName)) throw new Error(`invalid module name: ${moduleName}`);
  const base = new CFKVStore(env.KV);
  const prefix = `${moduleName}:`;
  return {
    get: (key) => base.get(prefix + key),
    put: (key, value, opts) => base.put(prefix + key, value, opts),
    delete: (key) => base.delete(prefix + key),
    async list(opts) {
      const res = await base.list({ ...opts, prefix: prefix + (opts?.prefix ?? "") });
      return { ...res, keys: res.keys.map((k) => k.slice(prefix.length)) };
    },
    getJSON: (key) => base.getJSON(prefix + key),
    putJSON: (key, value, opts) => base.putJSON(prefix + key, value, opts),
  };
}
