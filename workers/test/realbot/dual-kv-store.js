// The bot's own DualKVStore, in its shape: reads from the primary, both
// writes awaited together (Promise.allSettled), the primary's failure
// thrown, the secondary's logged and queued in Workers KV under
// __retry:mongo-failed:<key>:<id> (without the value) for the
// drift-verifier to replay. The guide turns it off (DUAL_WRITE=0) before
// the tee is added.
export const RETRY_PREFIX = "__retry:mongo-failed:";

export class DualKVStore {
  /** @param {any} primary @param {any} secondary @param {KVNamespace} rawKv */
  constructor(primary, secondary, rawKv) {
    this.primary = primary;
    this.secondary = secondary;
    this.rawKv = rawKv;
  }

  /** @param {string} op @param {string} key @param {() => Promise<any>} a @param {() => Promise<any>} b */
  async both(op, key, a, b) {
    const [p, s] = await Promise.allSettled([a(), b()]);
    if (s.status === "rejected") {
      console.warn("[dual-kv] secondary write failed", { op, err: String(s.reason?.message ?? s.reason) });
      const id = `${RETRY_PREFIX}${key}:${Math.random().toString(36).slice(2, 10)}`;
      await this.rawKv.put(id, JSON.stringify({ op, key, ts: Date.now() })).catch(() => {});
    }
    if (p.status === "rejected") throw p.reason;
    return p.value;
  }

  /** @param {string} key */
  get(key) {
    return this.primary.get(key);
  }
  /** @param {string} key */
  getJSON(key) {
    return this.primary.getJSON(key);
  }
  /** @param {any} [opts] */
  list(opts) {
    return this.primary.list(opts);
  }
  /** @param {string} key @param {string} value @param {any} [opts] */
  put(key, value, opts) {
    return this.both("put", key, () => this.primary.put(key, value, opts), () => this.secondary.put(key, value, opts));
  }
  /** @param {string} key @param {any} value @param {any} [opts] */
  putJSON(key, value, opts) {
    return this.both("putJSON", key, () => this.primary.putJSON(key, value, opts), () => this.secondary.putJSON(key, value, opts));
  }
  /** @param {string} key */
  delete(key) {
    return this.both("delete", key, () => this.primary.delete(key), () => this.secondary.delete(key));
  }
}
