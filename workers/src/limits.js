/**
 * Workers KV's limits and the errors its binding throws for them, with the
 * binding's own messages (as workerd and miniflare word them), so that code
 * written against `env.KV` sees the same exceptions from every object of
 * this package.
 * @module
 */

export {
  MAX_KEY_BYTES,
  MAX_VALUE_BYTES,
  MAX_METADATA_BYTES,
  MIN_EXPIRATION_TTL,
  MIN_CACHE_TTL,
  MAX_LIST_KEYS,
  MAX_BULK_GET_KEYS,
  MAX_BULK_GET_BYTES,
  byteLength,
} from "../bridge/kvlimits.js";
import { MAX_BULK_GET_BYTES, MAX_BULK_GET_KEYS, MAX_KEY_BYTES, MAX_LIST_KEYS, MAX_METADATA_BYTES, MAX_VALUE_BYTES, MIN_CACHE_TTL, MIN_EXPIRATION_TTL, byteLength } from "../bridge/kvlimits.js";

/** The value types of get and getWithMetadata. */
export const VALUE_TYPES = ["text", "json", "arrayBuffer", "stream"];

/**
 * An operation's failure as the binding reports it: `KV <OP> failed:
 * <status> <message>`. The status and, from the REST API, Cloudflare's code
 * and Retry-After ride along as properties.
 * @param {string} op GET, PUT, DELETE or GET_BULK (list fails as GET)
 * @param {number} status
 * @param {string} message
 * @param {{code?: number, retryAfter?: number, cause?: unknown}} [extra]
 * @returns {Error & {status: number, code?: number, retryAfter?: number}}
 */
export function kvError(op, status, message, extra = {}) {
  const err = /** @type {any} */ (new Error(`KV ${op} failed: ${status} ${message}`, extra.cause === undefined ? undefined : { cause: extra.cause }));
  err.status = status;
  if (extra.code !== undefined) err.code = extra.code;
  if (extra.retryAfter !== undefined) err.retryAfter = extra.retryAfter;
  return err;
}

/**
 * The key as the binding takes it (any value, converted to a string), with
 * its checks: empty, "." and ".." are TypeErrors before any I/O; a key over
 * 512 bytes fails the operation with 414.
 * @param {unknown} key
 * @param {string} op
 * @returns {string}
 */
export function checkKey(key, op) {
  const name = String(key);
  if (name === "") throw new TypeError("Key name cannot be empty.");
  if (name === "." || name === "..") throw new TypeError(`"${name}" is not allowed as a key name.`);
  const n = byteLength(name);
  if (n > MAX_KEY_BYTES) throw kvError(op, 414, `UTF-8 encoded length of ${n} exceeds key length limit of ${MAX_KEY_BYTES}.`);
  return name;
}

/**
 * A number option as workerd converts it: not a number is 0, fractions are
 * cut, and a value outside 32-bit range is a TypeError.
 * @param {unknown} v
 * @returns {number}
 */
export function toInt32(v) {
  const n = Number(v);
  if (Number.isNaN(n)) return 0;
  if (n < -2147483648 || n > 2147483647) {
    throw new TypeError("Value out of range. Must be between -2147483648 and 2147483647 (inclusive).");
  }
  return Math.trunc(n);
}

/**
 * The value type of get and getWithMetadata: a string or `{ type }`,
 * "text" when absent.
 * @param {unknown} arg
 * @returns {"text"|"json"|"arrayBuffer"|"stream"}
 */
export function valueType(arg) {
  const t = arg !== null && typeof arg === "object" ? /** @type {any} */ (arg).type : arg;
  if (t === undefined || t === null) return "text";
  if (!VALUE_TYPES.includes(/** @type {string} */ (t))) {
    throw new TypeError('Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".');
  }
  return /** @type {any} */ (t);
}

/**
 * Checks get's cacheTtl, which the proxy does not need but the binding
 * validates.
 * @param {unknown} arg
 */
export function checkCacheTtl(arg) {
  if (arg === null || typeof arg !== "object") return;
  const raw = /** @type {any} */ (arg).cacheTtl;
  if (raw === undefined) return;
  const ttl = Number(raw);
  if (Number.isNaN(ttl) || ttl < MIN_CACHE_TTL) {
    throw kvError("GET", 400, `Invalid cache_ttl of ${raw}. Cache TTL must be at least ${MIN_CACHE_TTL}.`);
  }
}

/**
 * @typedef {Object} PutPlan
 * @property {number} [expirationTtl] seconds, at least 60
 * @property {number} [expiration] absolute, seconds since the epoch
 * @property {string} [metadata] the metadata as JSON, at most 1024 bytes
 */

/**
 * Checks put's options as the binding does, at `now` (seconds): a TTL wins
 * over an absolute expiration; either must be at least 60 s away.
 * @param {unknown} options
 * @param {number} now seconds since the epoch
 * @returns {PutPlan}
 */
export function putPlan(options, now) {
  /** @type {PutPlan} */
  const plan = {};
  if (options === undefined || options === null) return plan;
  const o = /** @type {any} */ (options);
  if (o.expirationTtl !== undefined) {
    const ttl = toInt32(o.expirationTtl);
    if (ttl <= 0) throw kvError("PUT", 400, `Invalid expiration_ttl of ${ttl}. Please specify integer greater than 0.`);
    if (ttl < MIN_EXPIRATION_TTL) {
      throw kvError("PUT", 400, `Invalid expiration_ttl of ${ttl}. Expiration TTL must be at least ${MIN_EXPIRATION_TTL}.`);
    }
    plan.expirationTtl = ttl;
  } else if (o.expiration !== undefined) {
    const exp = toInt32(o.expiration);
    if (exp <= now) {
      throw kvError("PUT", 400, `Invalid expiration of ${exp}. Please specify integer greater than the current number of seconds since the UNIX epoch.`);
    }
    if (exp < now + MIN_EXPIRATION_TTL) {
      throw kvError("PUT", 400, `Invalid expiration of ${exp}. Expiration times must be at least ${MIN_EXPIRATION_TTL} seconds in the future.`);
    }
    plan.expiration = exp;
  }
  if (o.metadata !== undefined) {
    const raw = JSON.stringify(o.metadata); // throws on cycles and BigInt, as the binding does
    if (raw === undefined) throw kvError("PUT", 500, "Internal Server Error"); // a function: what workerd answers
    const n = byteLength(raw);
    if (n > MAX_METADATA_BYTES) throw kvError("PUT", 413, `Metadata length of ${n} exceeds limit of ${MAX_METADATA_BYTES}.`);
    plan.metadata = raw;
  }
  return plan;
}

/** @param {number} length */
export function valueTooLarge(length) {
  return kvError("PUT", 413, `Value length of ${length} exceeds limit of ${MAX_VALUE_BYTES}.`);
}

/**
 * @typedef {Object} ListPlan
 * @property {string} [prefix]
 * @property {number} limit 1..1000
 * @property {string} [cursor]
 */

/**
 * Checks list's options as the binding does: a limit of 0 or less (or not
 * a number) means the default, 1000; more than 1000 is refused.
 * @param {unknown} options
 * @returns {ListPlan}
 */
export function listPlan(options) {
  if (options !== undefined && options !== null && typeof options !== "object") {
    throw new TypeError("Failed to execute 'list' on 'KvNamespace': parameter 1 is not of type 'ListOptions'.");
  }
  const o = /** @type {any} */ (options ?? {});
  let limit = o.limit === undefined || o.limit === null ? MAX_LIST_KEYS : toInt32(o.limit);
  if (limit <= 0) limit = MAX_LIST_KEYS;
  if (limit > MAX_LIST_KEYS) {
    throw kvError("GET", 400, `Invalid key_count_limit of ${limit}. Please specify an integer less than ${MAX_LIST_KEYS}.`);
  }
  /** @type {ListPlan} */
  const plan = { limit };
  if (o.prefix !== undefined && o.prefix !== null) {
    plan.prefix = String(o.prefix);
    const n = byteLength(plan.prefix);
    if (n > MAX_KEY_BYTES) throw kvError("GET", 414, `UTF-8 encoded length of ${n} exceeds key length limit of ${MAX_KEY_BYTES}.`);
  }
  if (o.cursor !== undefined && o.cursor !== null && o.cursor !== "") plan.cursor = String(o.cursor);
  return plan;
}

/**
 * Checks the keys of a bulk get (get with an array of keys).
 * @param {unknown[]} keys
 * @param {string} type
 * @returns {string[]}
 */
export function bulkGetKeys(keys, type) {
  if (type !== "text" && type !== "json") {
    throw kvError("GET_BULK", 400, `"${type}" is not a valid type. Use "json" or "text"`);
  }
  if (keys.length > MAX_BULK_GET_KEYS) throw kvError("GET_BULK", 400, `You can request a maximum of ${MAX_BULK_GET_KEYS} keys`);
  if (keys.length < 1) throw kvError("GET_BULK", 400, "You must request a minimum of 1 key");
  return keys.map((k) => checkKey(k, "GET_BULK"));
}
