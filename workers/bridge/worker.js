/**
 * The bridge Worker: the subset of the Workers KV REST API that cfkv,
 * shadow-report and kvshadow-proxy use (values, metadata, keys, bulk get,
 * bulk write, bulk delete), served over the Worker's own KV binding, behind
 * the BRIDGE_TOKEN secret. Pointing cfkv's base URL at it reaches the
 * primary without the REST API's account budget.
 *
 * env: KV (the binding), BRIDGE_TOKEN (secret, required), ACCOUNT_ID and
 * NAMESPACE_ID (optional: when set, the only IDs served).
 * @module
 */
import { MAX_BULK_GET_KEYS, MAX_LIST_KEYS } from "./kvlimits.js";
import { fromBase64 } from "./kvlimits.js";
import { ApiError, Code, bindingError, fail, ok } from "./envelope.js";
import { RESERVED_PREFIX, checkKey, checkStageWrite, checkValue, parseExpiry, parseMetadata, refuseReserved } from "./rules.js";

/** The REST API's bulk write and delete limit. */
const MAX_BULK_WRITE = 10_000;
/**
 * The most binding writes one bulk call makes: a Worker invocation may do
 * 1,000 KV operations. The items past them are answered as unsuccessful
 * keys, which cfkv (as for the per-key write rate) sends again.
 */
const MAX_WRITES_PER_CALL = 1000;
/** The REST API's bulk body limit. */
const MAX_BULK_BYTES = 100 * 1024 * 1024;
const MIN_LIST = 10;

const root = "/client/v4/accounts/";

export default {
  /**
   * @param {Request} request
   * @param {{KV: KVNamespace, BRIDGE_TOKEN?: string, ACCOUNT_ID?: string, NAMESPACE_ID?: string}} env
   */
  async fetch(request, env) {
    try {
      if (!(await authorized(request, env.BRIDGE_TOKEN))) {
        throw new ApiError(403, Code.authentication, "Authentication error");
      }
      return await route(request, env);
    } catch (e) {
      if (e instanceof ApiError) return fail(e);
      return fail(bindingError(e));
    }
  },
};

/**
 * A bridge without its secret serves nobody.
 * @param {Request} request
 * @param {string|undefined} token
 */
async function authorized(request, token) {
  if (!token) return false;
  const got = request.headers.get("Authorization") ?? "";
  if (!got.startsWith("Bearer ")) return false;
  const enc = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", enc.encode(got.slice(7))),
    crypto.subtle.digest("SHA-256", enc.encode(token)),
  ]);
  const x = new Uint8Array(a), y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

const identifier = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * @param {Request} request
 * @param {any} env
 */
async function route(request, env) {
  const url = new URL(request.url);
  const noRoute = new ApiError(404, Code.noRoute, "No route for that URI");
  // A %-escape that is not one (kvapi's front, net/http, refuses the request
  // line before routing it): 400, not the 503 of a failing binding.
  if (badEscape.test(url.pathname)) {
    throw new ApiError(400, Code.invalidRequest, "invalid request: the request could not be parsed (a bad %-escape, a control character, a malformed or oversized header)");
  }
  if (!url.pathname.startsWith(root)) throw noRoute;
  const parts = url.pathname.slice(root.length).split("/");
  if (parts.length < 5 || parts[1] !== "storage" || parts[2] !== "kv" || parts[3] !== "namespaces") throw noRoute;
  const [account, , , , ns, ...rest] = parts;
  if (env.ACCOUNT_ID && decoded(account) !== env.ACCOUNT_ID) {
    throw new ApiError(404, Code.badAccount, "Could not route to the account, perhaps your object identifier is invalid?");
  }
  if (!identifier.test(ns)) throw new ApiError(400, Code.namespaceId, "malformed namespace ID");
  if (env.NAMESPACE_ID && ns !== env.NAMESPACE_ID) throw new ApiError(404, Code.noNamespace, "namespace not found");
  const endpoint = rest.join("/");
  const kv = env.KV;
  const m = request.method;
  if (rest[0] === "values" || rest[0] === "metadata") {
    if (rest.length !== 2) throw noRoute;
    let key;
    try {
      key = decodeURIComponent(rest[1]);
    } catch {
      throw new ApiError(400, Code.illegalKey, "illegal key name: could not URL-decode it");
    }
    checkKey(key, rest[0] === "values");
    if (rest[0] === "metadata") {
      if (m !== "GET") throw methodNotAllowed();
      return getMetadata(kv, key);
    }
    if (m === "GET") return getValue(kv, key);
    if (m === "PUT") return putValue(kv, key, request, url);
    if (m === "DELETE") {
      await kv.delete(key);
      return ok(null);
    }
    throw methodNotAllowed();
  }
  switch (`${endpoint} ${m}`) {
    case "keys GET":
      return listKeys(kv, url);
    case "bulk PUT":
      return bulkPut(kv, request);
    case "bulk/delete POST":
    case "bulk DELETE":
      return bulkDelete(kv, request);
    case "bulk/get POST":
      return bulkGet(kv, request);
  }
  if (["keys", "bulk", "bulk/delete", "bulk/get"].includes(endpoint)) throw methodNotAllowed();
  throw noRoute;
}

/** A "%" not followed by two hex digits. */
const badEscape = /%(?![0-9A-Fa-f]{2})/;

/**
 * A path segment decoded; undefined when its escapes spell no UTF-8, which
 * then names no account the bridge serves (kvapi decodes such a segment to
 * bytes, which match no account either).
 * @param {string} part
 */
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function methodNotAllowed() {
  return new ApiError(405, Code.method, "method not allowed for this route");
}

/**
 * The binding's get does not say when a key expires; listing does. The key
 * itself sorts first among the keys it prefixes.
 * @param {KVNamespace} kv
 * @param {string} key
 * @returns {Promise<number|undefined>}
 */
async function expiryOf(kv, key) {
  const page = await kv.list({ prefix: key, limit: 1 });
  const k = page.keys[0];
  return k && k.name === key ? k.expiration : undefined;
}

/** @param {KVNamespace} kv @param {string} key */
async function getValue(kv, key) {
  const [value, expiration] = await Promise.all([kv.get(key, "arrayBuffer"), expiryOf(kv, key)]);
  if (value === null) throw new ApiError(404, Code.keyNotFound, "get: 'key not found'");
  const headers = new Headers({ "Content-Type": "application/octet-stream" });
  if (expiration) headers.set("Expiration", String(expiration));
  return new Response(value, { headers });
}

/** @param {KVNamespace} kv @param {string} key */
async function getMetadata(kv, key) {
  const got = await kv.getWithMetadata(key, "stream");
  if (got.value === null) throw new ApiError(404, Code.keyNotFound, "get: 'key not found'");
  await /** @type {ReadableStream} */ (got.value).cancel();
  return ok(got.metadata ?? null);
}

/**
 * @param {KVNamespace} kv
 * @param {string} key
 * @param {Request} request
 * @param {URL} url
 */
async function putValue(kv, key, request, url) {
  const q = url.searchParams;
  let rawExp = q.get("expiration"), rawTtl = q.get("expiration_ttl");
  let value, metadata;
  if ((request.headers.get("Content-Type") ?? "").startsWith("multipart/form-data")) {
    let form;
    try {
      form = await request.formData();
    } catch {
      throw new ApiError(400, Code.invalidRequest, "invalid request: malformed multipart body");
    }
    const v = form.get("value");
    value = v === null ? new Uint8Array() : typeof v === "string" ? new TextEncoder().encode(v) : new Uint8Array(await v.arrayBuffer());
    const meta = form.get("metadata");
    metadata = parseMetadata(meta === null ? undefined : typeof meta === "string" ? meta : await meta.text());
    if (!rawExp && !rawTtl) {
      rawExp = /** @type {string|null} */ (form.get("expiration"));
      rawTtl = /** @type {string|null} */ (form.get("expiration_ttl"));
    }
  } else {
    value = new Uint8Array(await request.arrayBuffer());
  }
  checkValue(value);
  const expiry = parseExpiry(rawExp, rawTtl, Math.floor(Date.now() / 1000));
  await write(kv, key, value, expiry, metadata);
  return ok(null);
}

/**
 * One write through the binding. The binding takes expiries as 32-bit
 * numbers: one past 2038 is refused as the API refuses a bad expiration.
 * @param {KVNamespace} kv
 * @param {string} key
 * @param {Uint8Array} value
 * @param {{expirationTtl?: number, expiration?: number}} expiry
 * @param {unknown} metadata
 */
async function write(kv, key, value, expiry, metadata) {
  checkStageWrite(key, value, expiry, metadata);
  const exp = expiry.expiration ?? (expiry.expirationTtl ? Math.floor(Date.now() / 1000) + expiry.expirationTtl : 0);
  if (exp > 2147483647) {
    throw new ApiError(400, Code.expiration, "invalid expiration: a Workers KV binding takes expirations up to 2147483647 (2038)");
  }
  /** @type {KVNamespacePutOptions} */
  const opts = { ...expiry };
  if (metadata !== undefined) opts.metadata = metadata;
  await kv.put(key, value, opts);
}

/** @param {KVNamespace} kv @param {URL} url */
async function listKeys(kv, url) {
  const q = url.searchParams;
  let limit = MAX_LIST_KEYS;
  if (q.get("limit") !== null && q.get("limit") !== "") {
    limit = Number(q.get("limit"));
    if (!Number.isInteger(limit) || limit < MIN_LIST || limit > MAX_LIST_KEYS) {
      throw new ApiError(400, Code.invalidLimit, `invalid limit argument: want ${MIN_LIST}..${MAX_LIST_KEYS}`);
    }
  }
  const cursor = q.get("cursor") || undefined;
  const prefix = q.get("prefix") || undefined;
  if (prefix) refuseReserved(prefix);
  const page = await kv.list({ prefix, limit, cursor });
  const keys = page.keys.filter((k) => !k.name.startsWith(RESERVED_PREFIX)).map((k) => {
    /** @type {{name: string, expiration?: number, metadata?: unknown}} */
    const out = { name: k.name };
    if (k.expiration) out.expiration = k.expiration;
    if (k.metadata !== undefined) out.metadata = k.metadata;
    return out;
  });
  return ok(keys, { count: keys.length, cursor: page.list_complete ? "" : page.cursor });
}

/**
 * A JSON body of at most the API's bulk size.
 * @param {Request} request
 */
async function jsonBody(request) {
  const declared = Number(request.headers.get("Content-Length"));
  if (declared > MAX_BULK_BYTES) throw new ApiError(413, Code.tooLarge, `payload too large: the limit is ${MAX_BULK_BYTES} bytes`);
  const text = await request.text();
  if (text.length > MAX_BULK_BYTES) throw new ApiError(413, Code.tooLarge, `payload too large: the limit is ${MAX_BULK_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, Code.invalidRequest, "invalid request: the body is not the expected JSON");
  }
}

/**
 * Keeps the last item of each key, in order.
 * @template {{key: string}} T
 * @param {T[]} items
 * @returns {T[]}
 */
function lastOfEach(items) {
  const last = new Map(items.map((it, i) => [it.key, i]));
  return items.filter((it, i) => last.get(it.key) === i);
}

/**
 * Runs one binding call per item; the keys whose call failed are the bulk
 * call's unsuccessful keys, which cfkv sends again.
 * @template {{key: string}} T
 * @param {T[]} items
 * @param {(it: T) => Promise<void>} op
 */
async function each(items, op) {
  const now = items.slice(0, MAX_WRITES_PER_CALL);
  const results = await Promise.allSettled(now.map(op));
  const refused = now.filter((_, i) => results[i].status === "rejected").map((it) => it.key);
  if (refused.length === now.length && now.length > 0) {
    const first = /** @type {PromiseRejectedResult} */ (results[0]).reason;
    if (!/KV [A-Z_]+ failed: 429/.test(String(first?.message))) throw first; // the binding is failing, not rate-limiting
  }
  for (const it of items.slice(MAX_WRITES_PER_CALL)) refused.push(it.key);
  return ok({ successful_key_count: items.length - refused.length, unsuccessful_keys: refused });
}

/** @param {KVNamespace} kv @param {Request} request */
async function bulkPut(kv, request) {
  const pairs = await jsonBody(request);
  if (!Array.isArray(pairs)) throw new ApiError(400, Code.invalidRequest, "invalid request: the body is not the expected JSON");
  if (pairs.length > MAX_BULK_WRITE) {
    throw new ApiError(400, Code.invalidRequest, `invalid request: ${pairs.length} pairs, a bulk write takes at most ${MAX_BULK_WRITE}`);
  }
  const now = Math.floor(Date.now() / 1000);
  const items = pairs.map((p, i) => {
    try {
      return pairItem(p, now);
    } catch (e) {
      if (e instanceof ApiError) e.message = `pair ${i}: ${e.message}`;
      throw e; // a refused batch writes nothing
    }
  });
  return each(lastOfEach(items), (it) => write(kv, it.key, it.value, it.expiry, it.metadata));
}

/**
 * @param {any} p
 * @param {number} now
 */
function pairItem(p, now) {
  if (p === null || typeof p !== "object" || typeof p.key !== "string" || typeof p.value !== "string") {
    throw new ApiError(400, Code.invalidRequest, "invalid request: key and value are required");
  }
  checkKey(p.key);
  let value;
  if (p.base64) {
    try {
      value = fromBase64(p.value);
    } catch {
      throw new ApiError(400, Code.malformedValue, "malformed value: not base64");
    }
  } else value = new TextEncoder().encode(p.value);
  checkValue(value);
  const metadata = p.metadata === undefined || p.metadata === null ? undefined : parseMetadata(JSON.stringify(p.metadata));
  return { key: p.key, value, metadata, expiry: parseExpiry(p.expiration, p.expiration_ttl, now) };
}

/** @param {KVNamespace} kv @param {Request} request */
async function bulkDelete(kv, request) {
  const keys = await jsonBody(request);
  if (!Array.isArray(keys)) throw new ApiError(400, Code.invalidRequest, "invalid request: the body is not the expected JSON");
  if (keys.length > MAX_BULK_WRITE) {
    throw new ApiError(400, Code.invalidRequest, `invalid request: ${keys.length} keys, a bulk delete takes at most ${MAX_BULK_WRITE}`);
  }
  const items = keys.map((k, i) => {
    if (typeof k !== "string") throw new ApiError(400, Code.invalidRequest, "invalid request: the body is not the expected JSON");
    try {
      return { key: checkKey(k) };
    } catch (e) {
      if (e instanceof ApiError) e.message = `key ${i}: ${e.message}`;
      throw e;
    }
  });
  return each(lastOfEach(items), (it) => kv.delete(it.key));
}

/** @param {KVNamespace} kv @param {Request} request */
async function bulkGet(kv, request) {
  const body = await jsonBody(request);
  const keys = body?.keys;
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
    throw new ApiError(400, Code.invalidRequest, "invalid request: the body is not the expected JSON");
  }
  const type = body.type || "text";
  if (type !== "text" && type !== "json") throw new ApiError(400, Code.invalidRequest, 'invalid request: type must be "text" or "json"');
  if (keys.length > MAX_BULK_GET_KEYS) {
    throw new ApiError(400, Code.invalidRequest, `invalid request: ${keys.length} keys, a bulk get takes at most ${MAX_BULK_GET_KEYS}`);
  }
  keys.forEach((k, i) => {
    try {
      checkKey(k);
    } catch (e) {
      if (e instanceof ApiError) e.message = `key ${i}: ${e.message}`;
      throw e;
    }
  });
  const distinct = [...new Set(keys)];
  const withMetadata = body.withMetadata === true;
  const read = await Promise.all(
    distinct.map(async (k) => {
      const [got, expiration] = await Promise.all([
        kv.getWithMetadata(k, "text"),
        withMetadata ? expiryOf(kv, k) : undefined,
      ]);
      return { k, got, expiration };
    }),
  );
  /** @type {Record<string, unknown>} */
  const values = {};
  for (const { k, got, expiration } of read) {
    if (got.value === null) {
      values[k] = null;
      continue;
    }
    let v = got.value;
    if (type === "json") {
      try {
        v = JSON.parse(/** @type {string} */ (got.value));
      } catch {
        throw new ApiError(400, Code.invalidRequest, "invalid request: at least one of the requested keys holds a value that is not JSON");
      }
    }
    if (withMetadata) {
      /** @type {any} */
      const bv = { value: v, metadata: got.metadata ?? null };
      if (expiration) bv.expiration = expiration;
      v = bv;
    }
    values[k] = v;
  }
  return ok({ values });
}
