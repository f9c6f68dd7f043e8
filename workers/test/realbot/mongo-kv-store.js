// The bot's MongoKVStore as its phase-02 plan specifies it (written here
// from that shape, as tests/nodeinterop does): a collection per module,
// documents { _id: "<module>:<key>", value, expiresAt }, an expiry filter on
// get and none on list (an expired key is listed until MongoDB's TTL
// monitor deletes it).
import { getDb } from "./mongo-client.js";

/** Code of the refusal of a server that cannot build TTL indexes (FerretDB). */
const NOT_IMPLEMENTED = 238;
const escapeRegex = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export class MongoKVStore {
  /** @param {any} env @param {string} collectionName */
  constructor(env, collectionName) {
    this.env = env;
    this.name = collectionName;
    this.indexed = false;
  }

  async coll() {
    return (await getDb(this.env)).collection(this.name);
  }

  /** @param {string} key */
  async get(key) {
    const c = await this.coll();
    const doc = await c.findOne({ _id: /** @type {any} */ (key), $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $gt: new Date() } }] });
    return doc === null ? null : doc.value;
  }

  /** @param {string} key @param {string} value @param {{expirationTtl?: number}} [opts] */
  async put(key, value, opts = {}) {
    const c = await this.coll();
    if (!this.indexed) {
      await c.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, sparse: true }).catch((/** @type {any} */ e) => {
        if (e?.code !== NOT_IMPLEMENTED) throw e;
      });
      this.indexed = true;
    }
    const update = opts?.expirationTtl
      ? { $set: { value, expiresAt: new Date(Date.now() + opts.expirationTtl * 1000) } }
      : { $set: { value }, $unset: { expiresAt: "" } };
    await c.updateOne({ _id: /** @type {any} */ (key) }, update, { upsert: true });
  }

  /** @param {string} key */
  async delete(key) {
    await (await this.coll()).deleteOne({ _id: /** @type {any} */ (key) });
  }

  /** @param {{prefix?: string, limit?: number, cursor?: string}} [opts] */
  async list({ prefix = "", limit = 1000, cursor } = {}) {
    /** @type {any} */
    const id = { $regex: "^" + escapeRegex(prefix) };
    if (cursor) id.$gt = atob(cursor);
    const docs = await (await this.coll()).find({ _id: id }).sort({ _id: 1 }).limit(limit + 1).project({ _id: 1 }).toArray();
    const keys = docs.slice(0, limit).map((d) => String(d._id));
    const done = docs.length <= limit;
    return { keys, cursor: done ? undefined : btoa(keys[keys.length - 1]), done };
  }

  /** @param {string} key */
  async getJSON(key) {
    const raw = await this.get(key);
    if (raw == null) return null;
    try {
      return JSON.parse(raw);
    } catch {
      return null;
    }
  }

  /** @param {string} key @param {any} value @param {{expirationTtl?: number}} [opts] */
  putJSON(key, value, opts) {
    if (value === undefined) throw new Error("putJSON: value is undefined");
    return this.put(key, JSON.stringify(value), opts);
  }
}
