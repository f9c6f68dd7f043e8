// A bot Worker as the seeds describe it (modules that each own a namespace
// of keys through createStore), with the one line that picks its KV: the
// tee over its own binding, or the proxy binding. The tests run it in
// workerd through miniflare and send it bot-like updates.
import { kvshadowBinding, kvshadowTee } from "../../src/index.js";
import { createStore } from "../seed/create-store.js";

/**
 * @param {any} env
 * @param {ExecutionContext} ctx
 */
function pickKV(env, ctx, sampleRate = Number(env.KVSHADOW_SAMPLE ?? 0.05), hold = "") {
  if (env.KVSHADOW_MODE === "direct") return env.KV; // the bot before kvshadow
  if (env.KVSHADOW_MODE === "dual") return awaitingBoth(env.KV, env.KVSHADOW_MONGO_URL); // the bot's own dual write
  if (env.KVSHADOW_MODE === "tee") {
    /** @type {any} */
    const cfg = { url: env.KVSHADOW_URL, token: env.KVSHADOW_TOKEN, namespaceId: env.KVSHADOW_NAMESPACE, sampleRate };
    if (env.KVSHADOW_STAGE_TTL_MS) cfg.stageTtlMs = Number(env.KVSHADOW_STAGE_TTL_MS);
    if (env.KVSHADOW_STAGE_TIMEOUT_MS) cfg.stageTimeoutMs = Number(env.KVSHADOW_STAGE_TIMEOUT_MS);
    if (hold) cfg.fetch = holding(hold);
    return kvshadowTee(env.KV, cfg, ctx);
  }
  return kvshadowBinding({ url: env.KVSHADOW_URL, token: env.KVSHADOW_TOKEN, accountId: env.KVSHADOW_ACCOUNT, namespaceId: env.KVSHADOW_NAMESPACE });
}

/**
 * The bot's own dual write as its DualKVStore does it: every write goes to
 * the binding and to MongoDB, and the call awaits both
 * (Promise.allSettled); reads are the binding's. MongoDB is stood in for by
 * an HTTP endpoint (mongoURL) that answers after MongoDB's latency: what the
 * bot waits for is that round trip. The benchmark sets it beside the tee.
 * @param {any} kv
 * @param {string} mongoURL
 */
function awaitingBoth(kv, mongoURL) {
  const both = async (/** @type {Promise<any>} */ kvWrite, /** @type {string} */ key) => {
    const [r] = await Promise.allSettled([kvWrite, fetch(`${mongoURL}/${encodeURIComponent(key)}`, { method: "PUT" }).then((r) => r.arrayBuffer())]);
    if (r.status === "rejected") throw r.reason;
  };
  return {
    get: (/** @type {any[]} */ ...a) => kv.get(...a),
    getWithMetadata: (/** @type {any[]} */ ...a) => kv.getWithMetadata(...a),
    list: (/** @type {any} */ o) => kv.list(o),
    put: (/** @type {string} */ key, /** @type {any} */ value, /** @type {any} */ o) => both(kv.put(key, value, o), key),
    delete: (/** @type {string} */ key) => both(kv.delete(key), key),
  };
}

/**
 * A fetch for the tee whose batches first wait for `url` to answer: the
 * flip test holds a copy back that way, past the fence, for as long as it
 * wants and no longer.
 * @param {string} url
 */
function holding(url) {
  return async (/** @type {any} */ input, /** @type {any} */ init) => {
    if (String(input).endsWith("/kvshadow/v1/ingest")) await (await fetch(url)).text();
    return fetch(input, init);
  };
}

/**
 * The flip test's operations, one store call each through the tee:
 * put (its copy held back until op.hold answers, when given), get, and
 * incr, a read-modify-write of a counter; and binding-delete, a delete of
 * the binding itself, around the tee.
 * @param {any} op
 * @param {any} env
 * @param {ExecutionContext} ctx
 */
async function operate(op, env, ctx) {
  const KV = pickKV(env, ctx, 0, op.hold ?? "");
  switch (op.op) {
    case "put":
      await KV.put(op.key, op.value);
      return { ok: true };
    case "get":
      return { ok: true, value: await KV.get(op.key) };
    case "incr": {
      const n = Number((await KV.get(op.key)) ?? 0) + 1;
      await KV.put(op.key, String(n));
      return { ok: true, value: n };
    }
    case "binding-delete": // the bot's own code deleting a key of its binding, around the tee
      await env.KV.delete(op.key);
      return { ok: true };
  }
  throw new Error(`unknown op ${op.op}`);
}

/** One update: a guess in wordle, a trade, an emoji round, a cooldown. */
async function handle(update, env, ctx) {
  if (typeof update.op === "string") return operate(update, env, ctx);
  if (typeof update.read === "string") {
    // The tests' probe: one read of a full key, always reported to the proxy.
    return { found: (await pickKV(env, ctx, 1).get(update.read)) !== null };
  }
  const KV = pickKV(env, ctx); // the one line the bot changes: it was env.KV
  const wordle = createStore("wordle", { ...env, KV });
  const trading = createStore("trading", { ...env, KV });
  const loldle = createStore("loldle-emoji", { ...env, KV });
  const u = update.user;
  let writes = 2; // the game (put or delete) and the cooldown
  const game = (await wordle.getJSON(`games:${u}`)) ?? { guesses: [] };
  game.guesses.push(update.guess);
  if (game.guesses.length >= 6) await wordle.delete(`games:${u}`);
  else await wordle.putJSON(`games:${u}`, game, { expirationTtl: 3600 });
  await wordle.put(`cooldown:${u}`, String(update.seq), { expirationTtl: 120 });
  if (update.trade) {
    writes++;
    await trading.putJSON(`trades:${u}:${update.seq}`, { sym: update.trade, qty: update.seq % 7 });
  }
  const round = await loldle.get("round");
  if (round === null || update.seq % 10 === 0) {
    writes++;
    await loldle.put("round", `r${update.seq}`);
  }
  const listed = await trading.list({ prefix: `trades:${u}:`, limit: 5 });
  return { writes, guesses: game.guesses.length, trades: listed.keys.length, round: await loldle.get("round") };
}

export default {
  /**
   * @param {Request} request
   * @param {any} env
   * @param {ExecutionContext} ctx
   */
  async fetch(request, env, ctx) {
    try {
      return Response.json(await handle(await request.json(), env, ctx));
    } catch (e) {
      return new Response(String(e?.message ?? e), { status: 500 });
    }
  },
};
