/**
 * The REST API's input rules, with kvapi's status codes, Cloudflare codes
 * and messages, checked before the bridge touches its binding.
 * @module
 */
import { MAX_KEY_BYTES, MAX_METADATA_BYTES, MAX_VALUE_BYTES, MIN_EXPIRATION_TTL, byteLength } from "./kvlimits.js";
import { ApiError, Code } from "./envelope.js";

/** The longest TTL the project's contract accepts (kv.MaxTTL): 100 years. */
const MAX_TTL = 100 * 365 * 24 * 3600;

/** The prefix of kvshadow's own keys in the bot's namespace (kv.ReservedPrefix). */
export const RESERVED_PREFIX = "__kvshadow:";
/** The one of them kvshadow-proxy reads, writes and deletes through the bridge (dualwrite.StageKey). */
const STAGE_KEY = RESERVED_PREFIX + "stage";
/** What kvshadow-proxy writes there: a stage from the handover on, without expiry or metadata. */
const STAGE_MARKS = new Set(["handover", "live", "rampdown", "complete"]);

/**
 * Refuses a key or list prefix under RESERVED_PREFIX as kvshadow-proxy's
 * front refuses it (400 10042), but STAGE_KEY where `stage` allows it (the
 * values route).
 * @param {string} key
 * @param {boolean} [stage]
 */
export function refuseReserved(key, stage = false) {
  if (key.startsWith(RESERVED_PREFIX) && !(stage && key === STAGE_KEY)) {
    throw new ApiError(400, Code.illegalKey, `Illegal key name: keys under "${RESERVED_PREFIX}" are kvshadow's own; a client may not read, write, delete or list them.`);
  }
}

/**
 * @param {string} key
 * @param {boolean} [stage] whether STAGE_KEY is served (refuseReserved)
 */
export function checkKey(key, stage = false) {
  refuseReserved(key, stage);
  const n = byteLength(key);
  if (n > MAX_KEY_BYTES) throw new ApiError(414, Code.keyTooLong, `key too long: ${n} bytes, the limit is ${MAX_KEY_BYTES}`);
  if (key === "" || key === "." || key === "..") throw new ApiError(400, Code.illegalKey, "illegal key name");
  return key;
}

/**
 * Refuses a write of STAGE_KEY other than kvshadow-proxy's own: a stage
 * mark, without expiry or metadata. A tee cut off from the proxy serves its
 * binding when the key says "shadow" or less, or is gone.
 * @param {string} key
 * @param {Uint8Array} value
 * @param {{expirationTtl?: number, expiration?: number}} expiry
 * @param {unknown} metadata
 */
export function checkStageWrite(key, value, expiry, metadata) {
  if (key !== STAGE_KEY) return;
  if (!STAGE_MARKS.has(new TextDecoder().decode(value)) || expiry.expiration || expiry.expirationTtl || metadata !== undefined) {
    throw new ApiError(400, Code.illegalKey, `Illegal write of ${STAGE_KEY}: kvshadow-proxy writes only a stage from the handover on (${[...STAGE_MARKS].join(", ")}), without expiry or metadata.`);
  }
}

/** @param {Uint8Array|ArrayBuffer} value */
export function checkValue(value) {
  if (value.byteLength > MAX_VALUE_BYTES) {
    throw new ApiError(413, Code.tooLarge, `payload too large: a value holds at most ${MAX_VALUE_BYTES} bytes`);
  }
}

/**
 * Metadata as sent: JSON of at most 1024 bytes.
 * @param {string|undefined|null} raw
 * @returns {unknown} the parsed metadata, undefined for none
 */
export function parseMetadata(raw) {
  if (raw === undefined || raw === null) return undefined;
  if (byteLength(raw) > MAX_METADATA_BYTES) {
    throw new ApiError(413, Code.metadata, `invalid metadata: more than ${MAX_METADATA_BYTES} bytes`);
  }
  try {
    return JSON.parse(raw);
  } catch {
    throw new ApiError(400, Code.metadata, "invalid metadata: not JSON");
  }
}

/**
 * A whole number, also written as a float ("1.7e9", "60.0").
 * @param {unknown} v
 */
function wholeNumber(v) {
  if (typeof v === "string" && v.trim() === "") return NaN;
  const n = Number(v);
  return Number.isInteger(n) && Math.abs(n) <= 2 ** 53 ? n : NaN;
}

/**
 * The expiry options of a write, as kvapi reads them: expiration_ttl wins
 * over expiration; either must be at least 60 s away.
 * @param {unknown} rawExp
 * @param {unknown} rawTtl
 * @param {number} now seconds since the epoch
 * @returns {{expirationTtl?: number, expiration?: number}}
 */
export function parseExpiry(rawExp, rawTtl, now) {
  const given = (/** @type {unknown} */ v) => v !== undefined && v !== null && v !== "";
  if (given(rawTtl)) {
    const ttl = wholeNumber(rawTtl);
    if (!(ttl > 0)) throw new ApiError(400, Code.expirationTtl, "invalid expiration ttl: want a whole number of seconds above zero");
    if (ttl < MIN_EXPIRATION_TTL) {
      throw new ApiError(400, Code.expirationTtl, `invalid expiration ttl: the minimum is ${MIN_EXPIRATION_TTL} seconds`);
    }
    if (ttl > MAX_TTL) throw new ApiError(400, Code.expirationTtl, "invalid expiration ttl: too far in the future");
    return { expirationTtl: ttl };
  }
  if (given(rawExp)) {
    const exp = wholeNumber(rawExp);
    if (!(exp > now)) {
      throw new ApiError(400, Code.expiration, "invalid expiration: want a whole number of seconds since the UNIX epoch, in the future");
    }
    if (exp - now < MIN_EXPIRATION_TTL) {
      throw new ApiError(400, Code.expiration, `invalid expiration: it must be at least ${MIN_EXPIRATION_TTL} seconds in the future`);
    }
    if (exp - now > MAX_TTL) throw new ApiError(400, Code.expiration, "invalid expiration: too far in the future");
    return { expiration: exp };
  }
  return {};
}
