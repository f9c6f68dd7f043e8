/**
 * Cloudflare's response envelope and the Workers KV error codes, as the
 * project's REST API server (kvapi) answers with them.
 * @module
 */

export const Code = {
  authentication: 10000,
  unavailable: 10001,
  keyNotFound: 10009,
  namespaceId: 10011,
  malformedValue: 10012,
  noNamespace: 10013,
  tooManyWrites: 10022,
  tooLarge: 10024,
  invalidLimit: 10028,
  invalidRequest: 10029,
  keyTooLong: 10030,
  expiration: 10033,
  expirationTtl: 10034,
  invalidCursor: 10041,
  illegalKey: 10042,
  metadata: 10047,
  noRoute: 7000,
  method: 7001,
  badAccount: 7003,
};

/** A refusal with its HTTP status and Cloudflare code. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {number} code
   * @param {string} message never a key or a value: those are the caller's data
   * @param {number} [retryAfter] seconds
   */
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/**
 * @param {unknown} result
 * @param {{count: number, cursor: string}} [info]
 */
export function ok(result, info) {
  const body = { success: true, errors: [], messages: [], result: result ?? null };
  if (info) /** @type {any} */ (body).result_info = info;
  return Response.json(body);
}

/** @param {ApiError} e */
export function fail(e) {
  const headers = new Headers({ "Content-Type": "application/json" });
  if (e.retryAfter) headers.set("Retry-After", String(Math.ceil(e.retryAfter)));
  const body = { success: false, errors: [{ code: e.code, message: e.message }], messages: [], result: null };
  return new Response(JSON.stringify(body), { status: e.status, headers });
}

/**
 * The answer to a failure of the bridge's own binding: its per-key write
 * rate is Workers KV's 429; anything else is the service failing.
 * @param {unknown} err
 */
export function bindingError(err) {
  const m = /KV [A-Z_]+ failed: (\d{3})/.exec(String(/** @type {any} */ (err)?.message ?? ""));
  const status = m ? Number(m[1]) : 0;
  if (status === 429) return new ApiError(429, Code.tooManyWrites, "too many requests: a key can be written once a second", 1);
  return new ApiError(503, Code.unavailable, "service temporarily unavailable", 1);
}
