/**
 * A client of the Workers KV REST API subset the binding needs, turning
 * Cloudflare's envelopes into the binding's exceptions.
 * @module
 */
import { kvError } from "./limits.js";

/**
 * @typedef {Object} RestConfig
 * @property {string} url the API root, e.g. "https://kvshadow.example.com/client/v4/"
 * @property {string} [token] sent as "Authorization: Bearer <token>"
 * @property {string} accountId
 * @property {string} namespaceId
 * @property {typeof fetch} [fetch] the fetch to use; the global one by default
 */

/** Identifiers keep the shape of a request path (as cfkv checks them). */
const identifier = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * @param {RestConfig} cfg
 * @param {string} who the function named in errors
 */
export function checkConfig(cfg, who) {
  if (cfg === null || typeof cfg !== "object") throw new TypeError(`${who}: a config object is required`);
  let u;
  try {
    u = new URL(cfg.url);
  } catch {
    throw new TypeError(`${who}: url must be an absolute http(s) URL`);
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || u.username || u.password) {
    throw new TypeError(`${who}: url must be an absolute http(s) URL without credentials`);
  }
  for (const f of /** @type {const} */ (["accountId", "namespaceId"])) {
    if (!identifier.test(String(cfg[f] ?? ""))) throw new TypeError(`${who}: ${f} must match ${identifier}`);
  }
  if (cfg.token !== undefined && (typeof cfg.token !== "string" || /[\s\x00-\x1f\x7f]/.test(cfg.token))) {
    throw new TypeError(`${who}: token must be a string without whitespace or control characters`);
  }
}

export class RestClient {
  /** @param {RestConfig} cfg */
  constructor(cfg) {
    checkConfig(cfg, "kvshadowBinding");
    const root = cfg.url.endsWith("/") ? cfg.url : cfg.url + "/";
    this.base = `${root}accounts/${cfg.accountId}/storage/kv/namespaces/${cfg.namespaceId}/`;
    /** @type {Record<string, string>} */
    this.auth = cfg.token ? { Authorization: `Bearer ${cfg.token}` } : {};
    this.fetch = cfg.fetch ?? ((/** @type {any} */ input, /** @type {any} */ init) => fetch(input, init));
  }

  /**
   * Sends one request; a refusal becomes the binding's exception.
   * @param {string} op
   * @param {string} method
   * @param {string} path
   * @param {{query?: Record<string, string|number|undefined>, body?: BodyInit, headers?: Record<string,string>, notFound?: boolean}} [o]
   * @returns {Promise<Response|null>} null for a missing key when notFound is set
   */
  async send(op, method, path, o = {}) {
    const url = new URL(this.base + path);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    let resp;
    try {
      resp = await this.fetch(url.toString(), { method, body: o.body, headers: { ...this.auth, ...o.headers } });
    } catch (cause) {
      throw kvError(op, 503, "kvshadow-proxy unreachable", { cause });
    }
    if (resp.ok) return resp;
    const text = await resp.text();
    let code, message;
    try {
      const env = JSON.parse(text);
      code = env?.errors?.[0]?.code;
      message = env?.errors?.[0]?.message;
    } catch {
      // not an envelope: a load balancer's or a tunnel's page
    }
    if (o.notFound && resp.status === 404 && code === 10009) return null;
    const ra = Number(resp.headers.get("Retry-After"));
    throw kvError(op, resp.status, message || resp.statusText || "request failed", {
      code,
      retryAfter: Number.isFinite(ra) && ra > 0 ? ra : undefined,
    });
  }

  /**
   * @param {string} op
   * @param {string} method
   * @param {string} path
   * @param {unknown} body
   * @returns {Promise<any>} the envelope's result
   */
  async sendJSON(op, method, path, body) {
    const resp = /** @type {Response} */ (await this.send(op, method, path, {
      body: JSON.stringify(body),
      headers: { "Content-Type": "application/json" },
    }));
    return (await resp.json()).result;
  }

  /**
   * @param {string} key
   * @returns {Promise<{bytes: Uint8Array, expiration?: number}|null>}
   */
  async getValue(key) {
    const resp = await this.send("GET", "GET", "values/" + encodeURIComponent(key), { notFound: true });
    if (resp === null) return null;
    const bytes = new Uint8Array(await resp.arrayBuffer());
    const exp = Number(resp.headers.get("Expiration"));
    return exp > 0 ? { bytes, expiration: exp } : { bytes };
  }

  /**
   * @param {string} key
   * @returns {Promise<{metadata: unknown}|null>}
   */
  async getMetadata(key) {
    const resp = await this.send("GET", "GET", "metadata/" + encodeURIComponent(key), { notFound: true });
    if (resp === null) return null;
    return { metadata: (await resp.json()).result ?? null };
  }

  /**
   * @param {string} key
   * @param {Uint8Array} bytes
   * @param {import("./limits.js").PutPlan} plan
   */
  async putValue(key, bytes, plan) {
    const query = { expiration_ttl: plan.expirationTtl, expiration: plan.expiration };
    const path = "values/" + encodeURIComponent(key);
    if (plan.metadata === undefined) {
      await this.send("PUT", "PUT", path, { query, body: bytes, headers: { "Content-Type": "application/octet-stream" } });
      return;
    }
    const form = new FormData();
    form.set("value", new Blob([bytes]));
    form.set("metadata", plan.metadata);
    await this.send("PUT", "PUT", path, { query, body: form });
  }

  /** @param {string} key */
  async deleteValue(key) {
    await this.send("DELETE", "DELETE", "values/" + encodeURIComponent(key));
  }

  /**
   * @param {{prefix?: string, limit: number, cursor?: string}} o
   * @returns {Promise<{keys: {name: string, expiration?: number, metadata?: unknown}[], cursor: string}>}
   */
  async listKeys(o) {
    const resp = /** @type {Response} */ (await this.send("GET", "GET", "keys", {
      query: { prefix: o.prefix || undefined, limit: o.limit, cursor: o.cursor || undefined },
    }));
    const env = await resp.json();
    return { keys: env.result ?? [], cursor: env.result_info?.cursor ?? "" };
  }

  /**
   * @param {string[]} keys
   * @param {"text"|"json"} type
   * @param {boolean} withMetadata
   * @returns {Promise<Record<string, any>>}
   */
  async bulkGet(keys, type, withMetadata) {
    const result = await this.sendJSON("GET_BULK", "POST", "bulk/get", { keys, type, withMetadata });
    return result?.values ?? {};
  }
}
