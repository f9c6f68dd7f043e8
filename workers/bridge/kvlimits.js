/**
 * Workers KV's published limits and the base64 of bulk values: what the
 * bridge Worker and the package's src/ both need. It lives in the bridge's
 * folder because the bridge is deployed from that folder alone (wrangler
 * bundles nothing from outside it); src/limits.js and src/values.js
 * re-export it.
 * @module
 */

export const MAX_KEY_BYTES = 512;
export const MAX_VALUE_BYTES = 25 * 1024 * 1024;
export const MAX_METADATA_BYTES = 1024;
export const MIN_EXPIRATION_TTL = 60;
export const MIN_CACHE_TTL = 30;
export const MAX_LIST_KEYS = 1000;
export const MAX_BULK_GET_KEYS = 100;
export const MAX_BULK_GET_BYTES = 25 * 1024 * 1024;

const encoder = new TextEncoder();

/** @param {string} s @returns {number} UTF-8 length */
export function byteLength(s) {
  return encoder.encode(s).byteLength;
}

/** @param {Uint8Array} bytes @returns {string} */
export function toBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** @param {string} s @returns {Uint8Array} */
export function fromBase64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
