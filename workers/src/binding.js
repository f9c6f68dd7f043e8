/**
 * kvshadowBinding: a KVNamespace that speaks the Workers KV REST API to
 * kvshadow-proxy (or to anything that serves that API).
 * @module
 */
import { bulkGetKeys, checkCacheTtl, checkKey, listPlan, putPlan, valueType } from "./limits.js";
import { RestClient } from "./rest.js";
import { asType, valueBytes } from "./values.js";

/** The REST API's smallest list page; smaller limits are served from one. */
const REST_MIN_LIST = 10;

/**
 * @typedef {Object} ListKey
 * @property {string} name
 * @property {number} [expiration] seconds since the epoch
 * @property {unknown} [metadata]
 *
 * @typedef {Object} ListResult
 * @property {ListKey[]} keys
 * @property {boolean} list_complete
 * @property {string} [cursor] present when list_complete is false
 * @property {null} cacheStatus
 */

/**
 * Returns an object with the KVNamespace interface of a Workers binding
 * whose every call is one (or, for getWithMetadata of bytes, two) REST
 * requests to `url`. Inputs are checked before any request, with the
 * binding's exceptions and messages; the server's refusals come back as
 * the binding's `KV <OP> failed: <status> <message>` errors.
 * @param {import("./rest.js").RestConfig} cfg
 */
export function kvshadowBinding(cfg) {
  return new ProxyNamespace(new RestClient(cfg));
}

export class ProxyNamespace {
  /** @param {RestClient} rest */
  constructor(rest) {
    this.rest = rest;
  }

  /**
   * @param {unknown} key a key, or an array of at most 100 keys (bulk get)
   * @param {unknown} [options] a type or { type, cacheTtl }
   * @returns {Promise<any>}
   */
  async get(key, options) {
    const type = valueType(options);
    checkCacheTtl(options);
    if (Array.isArray(key)) {
      const keys = bulkGetKeys(key, type);
      const values = await this.rest.bulkGet(keys, /** @type {"text"|"json"} */ (type), false);
      return new Map(keys.map((k) => [k, values[k] ?? null]));
    }
    const name = checkKey(key, "GET");
    const got = await this.rest.getValue(name);
    return got === null ? null : asType(got.bytes, type);
  }

  /**
   * @param {unknown} key a key, or an array of at most 100 keys
   * @param {unknown} [options]
   * @returns {Promise<any>} { value, metadata, cacheStatus }, or a Map of them for an array
   */
  async getWithMetadata(key, options) {
    const type = valueType(options);
    checkCacheTtl(options);
    if (Array.isArray(key)) {
      const keys = bulkGetKeys(key, type);
      const values = await this.rest.bulkGet(keys, /** @type {"text"|"json"} */ (type), true);
      return new Map(keys.map((k) => [k, values[k] ? { value: values[k].value, metadata: values[k].metadata ?? null } : null]));
    }
    const name = checkKey(key, "GET");
    if (type === "text" || type === "json") {
      // One request: bulk get's text is the value decoded as UTF-8, which
      // is what the binding's "text" returns too.
      const v = (await this.rest.bulkGet([name], "text", true))[name];
      if (!v) return { value: null, metadata: null, cacheStatus: null };
      return { value: type === "json" ? JSON.parse(v.value) : v.value, metadata: v.metadata ?? null, cacheStatus: null };
    }
    const [got, meta] = await Promise.all([this.rest.getValue(name), this.rest.getMetadata(name)]);
    if (got === null) return { value: null, metadata: null, cacheStatus: null };
    return { value: asType(got.bytes, type), metadata: meta?.metadata ?? null, cacheStatus: null };
  }

  /**
   * @param {unknown} key
   * @param {unknown} value a string, ArrayBuffer, view or ReadableStream
   * @param {{expirationTtl?: number, expiration?: number, metadata?: unknown}} [options]
   * @returns {Promise<void>}
   */
  async put(key, value, options) {
    const name = checkKey(key, "PUT");
    const plan = putPlan(options, Math.floor(Date.now() / 1000));
    const bytes = await valueBytes(value);
    await this.rest.putValue(name, bytes, plan);
  }

  /**
   * @param {unknown} key
   * @returns {Promise<void>}
   */
  async delete(key) {
    await this.rest.deleteValue(checkKey(key, "DELETE"));
  }

  /**
   * Lists keys in byte order. A limit under the REST API's smallest page
   * (10) is served from a page of 10, with a cursor of this object's own
   * that remembers how far into that page the caller is.
   * @param {{prefix?: string, limit?: number, cursor?: string}} [options]
   * @returns {Promise<ListResult>}
   */
  async list(options) {
    const plan = listPlan(options);
    const { restCursor, skip } = decodeCursor(plan.cursor);
    const want = Math.min(1000, Math.max(REST_MIN_LIST, skip + plan.limit));
    const page = await this.rest.listKeys({ prefix: plan.prefix, limit: want, cursor: restCursor });
    const keys = page.keys.slice(skip, skip + plan.limit).map(listKey);
    /** @type {ListResult} */
    let res;
    if (skip + plan.limit < page.keys.length) {
      res = { keys, list_complete: false, cursor: encodeCursor(restCursor, skip + plan.limit), cacheStatus: null };
    } else if (page.cursor === "") {
      res = { keys, list_complete: true, cacheStatus: null };
    } else {
      res = { keys, list_complete: false, cursor: encodeCursor(page.cursor, 0), cacheStatus: null };
    }
    return res;
  }
}

/**
 * @param {any} k a key of the REST listing
 * @returns {ListKey}
 */
function listKey(k) {
  /** @type {ListKey} */
  const out = { name: k.name };
  if (k.expiration) out.expiration = k.expiration;
  if (k.metadata !== undefined && k.metadata !== null) out.metadata = k.metadata;
  return out;
}

/** A cursor of this object: "<skip>.<REST cursor>". */
const ownCursor = /^(\d{1,4})\.(.*)$/s;

/**
 * @param {string} restCursor
 * @param {number} skip
 */
function encodeCursor(restCursor, skip) {
  return `${skip}.${restCursor}`;
}

/**
 * A cursor that is not one of ours goes to the server as it is, which
 * judges it.
 * @param {string|undefined} c
 */
function decodeCursor(c) {
  if (!c) return { restCursor: "", skip: 0 };
  const m = ownCursor.exec(c);
  return m ? { restCursor: m[2], skip: Number(m[1]) } : { restCursor: c, skip: 0 };
}
