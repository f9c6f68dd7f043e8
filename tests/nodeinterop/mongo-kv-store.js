// The JavaScript bot's MongoKVStore, as seed phase-02 specifies it: the
// queries the bot itself sends for get, put, delete and list, over the
// official Node.js driver. The interop test runs it against documents that
// kvshadow's Go backend wrote, and the reverse.

/** Code of the refusal of a server that cannot build TTL indexes (FerretDB). */
const NOT_IMPLEMENTED = 238;

const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The read-time expiry filter of every read (code-reviewer #7). */
const live = () => ({
  $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $gt: new Date() } }],
});

export class MongoKVStore {
  /**
   * @param {import("mongodb").Db} db
   * @param {string} collectionName the module's name, "-" turned into "_"
   */
  constructor(db, collectionName) {
    this.coll = db.collection(collectionName);
    this.indexed = false;
  }

  async ensureIndex() {
    if (this.indexed) return;
    try {
      await this.coll.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, sparse: true });
    } catch (err) {
      // The embedded test server has no TTL indexes; the read-time filter
      // still hides expired keys, as it does on Atlas between TTL sweeps.
      if (err?.code !== NOT_IMPLEMENTED) throw err;
    }
    this.indexed = true;
  }

  /** @returns {Promise<string|null>} null on a missing or expired key */
  async get(key) {
    const doc = await this.coll.findOne({ _id: key, ...live() });
    return doc === null ? null : doc.value;
  }

  async put(key, value, opts = {}) {
    await this.ensureIndex();
    const update = opts.expirationTtl
      ? { $set: { value, expiresAt: new Date(Date.now() + opts.expirationTtl * 1000) } }
      : { $set: { value }, $unset: { expiresAt: "" } };
    await this.coll.updateOne({ _id: key }, update, { upsert: true });
  }

  async delete(key) {
    await this.coll.deleteOne({ _id: key });
  }

  /** Keys WITH their prefix, sorted by _id; the cursor is the last _id in base64. */
  async list({ prefix = "", limit = 1000, cursor } = {}) {
    const id = { $regex: "^" + escapeRegex(prefix) };
    if (cursor) id.$gt = Buffer.from(cursor, "base64").toString("utf8");
    const docs = await this.coll
      .find({ _id: id, ...live() })
      .sort({ _id: 1 })
      .limit(limit + 1)
      .project({ _id: 1 })
      .toArray();
    const keys = docs.slice(0, limit).map((d) => d._id);
    const done = docs.length <= limit;
    return { keys, cursor: done ? undefined : Buffer.from(keys[keys.length - 1], "utf8").toString("base64"), done };
  }

  async getJSON(key) {
    const raw = await this.get(key);
    if (raw === null || raw === undefined) return null;
    try {
      return JSON.parse(raw);
    } catch {
      console.warn(JSON.stringify({ event: "kv_json_corrupt" }));
      return null;
    }
  }

  async putJSON(key, value, opts) {
    if (value === undefined) throw new Error("putJSON: value is undefined");
    await this.put(key, JSON.stringify(value), opts);
  }
}
