// The bot's CFKVStore, as written in its plan (seed phase-03), unchanged:
// the tests run it over this package's objects to show that the bot needs
// no change but the one line that picks its binding.

/** KVStore over a KVNamespace binding. Workers KV allows 1 write/s per key. */
export class CFKVStore {
  /** @param {KVNamespace} kvNamespace */
  constructor(kvNamespace) {
    this.kv = kvNamespace;
  }

  /** @param {string} key @returns {Promise<string|null>} */
  get(key) {
    return this.kv.get(key, { type: "text" });
  }

  /** @param {string} key @param {string} value @param {{expirationTtl?: number}} [opts] */
  put(key, value, opts) {
    return this.kv.put(key, value, opts?.expirationTtl ? { expirationTtl: opts.expirationTtl } : undefined);
  }

  /** @param {string} key */
  delete(key) {
    return this.kv.delete(key);
  }

  /** @param {{prefix?: string, limit?: number, cursor?: string}} [opts] */
  async list({ prefix, limit, cursor } = {}) {
    const result = await this.kv.list({ prefix, limit, cursor });
    return { keys: result.keys.map((k) => k.name), cursor: result.cursor, done: result.list_complete };
  }

  /** @param {string} key @returns {Promise<any|null>} */
  async getJSON(key) {
    const raw = await this.get(key);
    if (raw == null) return null;
    try {
      return JSON.parse(raw);
    } catch (e) {
      console.warn("getJSON parse failed", { key, err: String(e) });
      return null;
    }
  }

  /** @param {string} key @param {any} value @param {{expirationTtl?: number}} [opts] */
  putJSON(key, value, opts) {
    if (value === undefined) throw new Error("putJSON: value is undefined");
    return this.put(key, JSON.stringify(value), opts);
  }
}
