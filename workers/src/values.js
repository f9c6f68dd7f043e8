/**
 * Values as the binding takes and returns them: put accepts strings,
 * ArrayBuffers, views and ReadableStreams (other primitives become their
 * string); get returns text, JSON, an ArrayBuffer or a stream.
 * @module
 */
import { MAX_VALUE_BYTES, valueTooLarge } from "./limits.js";

const encoder = new TextEncoder();

/**
 * Reads a put value into bytes, refusing more than 25 MiB with the
 * binding's message (which counts the whole stream).
 * @param {unknown} value
 * @returns {Promise<Uint8Array>}
 */
export async function valueBytes(value) {
  let bytes;
  if (typeof value === "string") bytes = encoder.encode(value);
  else if (value instanceof ArrayBuffer) bytes = new Uint8Array(value.slice(0));
  else if (ArrayBuffer.isView(value)) bytes = new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  else if (value instanceof ReadableStream) return readStream(value);
  else if (value !== null && (typeof value === "object" || typeof value === "function")) {
    throw new TypeError("KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.");
  } else bytes = encoder.encode(String(value));
  if (bytes.byteLength > MAX_VALUE_BYTES) throw valueTooLarge(bytes.byteLength);
  return bytes;
}

/**
 * @param {ReadableStream} stream
 * @returns {Promise<Uint8Array>}
 */
async function readStream(stream) {
  /** @type {Uint8Array[]} */
  const chunks = [];
  let length = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = typeof value === "string" ? encoder.encode(value) : new Uint8Array(value.buffer ?? value, value.byteOffset ?? 0, value.byteLength);
    length += chunk.byteLength;
    if (length <= MAX_VALUE_BYTES) chunks.push(chunk.slice());
  }
  if (length > MAX_VALUE_BYTES) throw valueTooLarge(length);
  return concat(chunks, length);
}

/**
 * @param {Uint8Array[]} chunks
 * @param {number} length
 */
function concat(chunks, length) {
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * The value in the type asked for.
 * @param {Uint8Array} bytes
 * @param {"text"|"json"|"arrayBuffer"|"stream"} type
 * @returns {any}
 */
export function asType(bytes, type) {
  switch (type) {
    case "arrayBuffer":
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    case "stream":
      return new Response(bytes).body;
    case "json":
      return JSON.parse(new TextDecoder().decode(bytes));
    default:
      return new TextDecoder().decode(bytes);
  }
}

export { fromBase64, toBase64 } from "../bridge/kvlimits.js";
