// make tee-check's wrapper of the bot's own Worker (tests/teecheck: its
// entry point is `export default checked(<the bot's default export>)`), each
// handler invocation given its binding (env[KVSHADOW_TEE_CHECK_BINDING])
// with every put and delete recorded. Once the invocation and all it left
// to ctx.waitUntil are over, each write of it whose copy (key and value)
// the tee did not send to kvshadow-proxy's ingest (with fetch) went around
// the tee: written through the binding itself, not the kvshadowTee over it
// (from handover on the tee writes through the proxy, so every binding
// write is one). GET /__kvshadow/tee-check answers how many invocations
// are not over (running: their copies may be unsent), the binding's name,
// and those writes (around) by the invocation that made them: fetch with its method and
// path, scheduled with its cron, queue with its queue, any other handler by
// its name.
import { toBase64, valueBytes } from "../src/values.js";

/** @type {Map<string, number>} the copies the tee sent, "key\nbase64 value" ("key\n-": a delete) */
const sent = new Map();
/** @type {Map<string, {by: string, key: string, writes: number}>} */
const around = new Map();
let running = 0;

/** @param {Map<string, any>} m @param {string} k @param {number} n */
function add(m, k, n) {
  const v = (m.get(k) ?? 0) + n;
  if (v > 0) m.set(k, v);
  else m.delete(k);
}

const fetchOut = globalThis.fetch;
globalThis.fetch = (/** @type {any} */ input, /** @type {any} */ init) => {
  if (typeof init?.body === "string" && String(input?.url ?? input).endsWith("/kvshadow/v1/ingest")) {
    try {
      for (const c of JSON.parse(init.body).copies ?? []) add(sent, `${c.key}\n${c.deleted ? "-" : c.value}`, 1);
    } catch {
      // not a batch of the tee's
    }
  }
  return fetchOut(input, init);
};

/** @param {any} t @param {string|symbol} p */
const member = (t, p) => (typeof t[p] === "function" ? t[p].bind(t) : t[p]);

/** The binding, its writes recorded once acknowledged: [key, as sent]. @param {any} kv @param {string[][]} writes */
function recorded(kv, writes) {
  return new Proxy(kv, {
    get(t, p) {
      if (p === "put") {
        return async (/** @type {any} */ k, /** @type {any} */ v, /** @type {any} */ o) => {
          const b64 = v instanceof ReadableStream ? "" : await valueBytes(v).then(toBase64, () => "");
          await t.put(k, v, o);
          writes.push([String(k), `${k}\n${b64}`]);
        };
      }
      if (p === "delete") return async (/** @type {any} */ k) => (await t.delete(k), writes.push([String(k), `${k}\n-`]), undefined);
      return member(t, p);
    },
  });
}

/** @param {string} name @param {any} x */
function invocation(name, x) {
  if (name === "fetch") return `fetch ${x.method} ${new URL(x.url).pathname}`;
  if (name === "scheduled") return x.cron ? `scheduled (cron ${x.cron})` : "scheduled";
  return name === "queue" ? `queue ${x.queue}` : name;
}

/** @param {any} bot @param {string} name @param {Function} handler */
function watched(bot, name, handler) {
  return async (/** @type {any} */ x, /** @type {any} */ env, /** @type {any} */ ctx) => {
    if (name === "fetch" && new URL(x.url).pathname === "/__kvshadow/tee-check") {
      return Response.json({ running, binding: env.KVSHADOW_TEE_CHECK_BINDING, around: [...around.values()] });
    }
    const { KVSHADOW_TEE_CHECK_BINDING: binding, ...own } = env;
    /** @type {string[][]} */
    const writes = [];
    /** @type {Promise<unknown>[]} */
    const waited = [];
    const by = invocation(name, x);
    running++;
    const c = new Proxy(ctx, { get: (t, p) => (p === "waitUntil" ? (/** @type {any} */ q) => (waited.push(q), t.waitUntil(q)) : member(t, p)) });
    try {
      return await handler.call(bot, x, { ...own, [binding]: recorded(env[binding], writes) }, c);
    } finally {
      ctx.waitUntil(
        (async () => {
          for (let n = 0; n < waited.length; ) {
            const upto = waited.length;
            await Promise.allSettled(waited.slice(n, upto));
            n = upto;
          }
          for (const [key, w] of writes) {
            if (sent.has(w)) add(sent, w, -1);
            else {
              const a = around.get(`${by}\n${key}`) ?? { by, key, writes: 0 };
              a.writes++;
              around.set(`${by}\n${key}`, a);
            }
          }
        })().finally(() => running--),
      );
    }
  };
}

/**
 * The bot's handlers, checked; a default export that is no object of
 * handlers (a WorkerEntrypoint class) runs as it is, unwatched.
 * @param {any} bot its default export
 */
export function checked(bot) {
  if (bot === null || typeof bot !== "object") return bot;
  return Object.fromEntries(Object.entries(bot ?? {}).map(([name, h]) => [name, typeof h === "function" ? watched(bot, name, h) : h]));
}
