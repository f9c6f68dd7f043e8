// A bot Worker with the real bot's storage shape: modules that each own a
// namespace of keys through the bot's createStore, which reads
// STORAGE_PRIMARY, DUAL_WRITE and MONGODB_URI; its own DualKVStore and
// drift-verifier cron; and the guide's one line (KVSHADOW_TEE=1: the tee
// over its binding; KVSHADOW_BINDING=1: kvshadow-proxy as its KV through
// the binding-compatible client). make rehearse deploys it step by step
// with the guide's flags; the bot benchmark measures a call in each.
import { kvshadowBinding, kvshadowTee } from "../../src/index.js";
import { createStore } from "./create-store.js";
import { runDriftVerifier } from "./drift-verifier.js";
import { closeMongo } from "./mongo-client.js";

/**
 * The invocation's env, with the one line applied; fetches counts the
 * subrequests kvshadow makes (the tee's copies and stage reads, or the
 * binding's calls).
 * @param {any} env
 * @param {ExecutionContext} ctx
 * @param {{n: number}} fetches
 */
function invocationEnv(env, ctx, fetches) {
  const counted = (/** @type {any} */ i, /** @type {any} */ o) => {
    fetches.n++;
    totals.fetches++;
    return fetch(i, o);
  };
  /** @type {any} */
  const cfg = { url: env.KVSHADOW_URL, token: env.KVSHADOW_TOKEN, namespaceId: env.KVSHADOW_NAMESPACE, fetch: counted };
  if (env.KVSHADOW_STAGE_TTL_MS) cfg.stageTtlMs = Number(env.KVSHADOW_STAGE_TTL_MS);
  if (env.KVSHADOW_TEE === "1") return { ...env, KV: kvshadowTee(env.KV, { ...cfg, sampleRate: Number(env.KVSHADOW_SAMPLE ?? 0.05) }, ctx) };
  if (env.KVSHADOW_BINDING === "1") return { ...env, KV: kvshadowBinding({ ...cfg, url: new URL("/client/v4/", env.KVSHADOW_URL).toString(), accountId: env.KVSHADOW_ACCOUNT ?? "" }) };
  return { ...env };
}

/** Every subrequest to kvshadow since the last stats call, those sent in
 * ctx.waitUntil after the response included (one isolate in miniflare). */
const totals = { fetches: 0, invocations: 0 };

/** One update: a guess in wordle, a trade now and then, an emoji round;
 * it answers what it wrote, [key, value or null for a delete]. */
async function update(u, env) {
  const wordle = createStore("wordle", env);
  const trading = createStore("trading", env);
  const loldle = createStore("loldle-emoji", env);
  const written = [];
  const game = (await wordle.getJSON(`games:${u.user}`)) ?? { guesses: [] };
  game.guesses.push(u.guess);
  if (game.guesses.length >= 6) {
    await wordle.delete(`games:${u.user}`);
    written.push([`wordle:games:${u.user}`, null]);
  } else {
    await wordle.putJSON(`games:${u.user}`, game, { expirationTtl: 3600 });
    written.push([`wordle:games:${u.user}`, JSON.stringify(game)]);
  }
  await wordle.put(`cooldown:${u.user}`, String(u.seq), { expirationTtl: 3600 });
  written.push([`wordle:cooldown:${u.user}`, String(u.seq)]);
  if (u.trade) {
    const trade = { sym: u.trade, qty: u.seq % 7 };
    await trading.putJSON(`trades:${u.user}:${u.seq}`, trade);
    written.push([`trading:trades:${u.user}:${u.seq}`, JSON.stringify(trade)]);
  }
  if ((await loldle.get("round")) === null || u.seq % 10 === 0) {
    await loldle.put("round", `r${u.seq}`);
    written.push(["loldle-emoji:round", `r${u.seq}`]);
  }
  const listed = await trading.list({ prefix: `trades:${u.user}:`, limit: 5 });
  return { written, guesses: game.guesses.length, trades: listed.keys.length };
}

/** The benchmark's typical bot call: one getJSON and one putJSON. */
async function call(u, env) {
  const s = createStore("wordle", env);
  const began = Date.now();
  const v = (await s.getJSON(`bench:${u.user}`)) ?? { n: 0 };
  v.n++;
  await s.putJSON(`bench:${u.user}`, v);
  return { ms: Date.now() - began, n: v.n };
}

/** The rehearsal's checks of the end state: what the bot reads of keys
 * (module:key), in one invocation. */
async function read(q, env) {
  const values = [];
  for (const key of q.keys) {
    const [module, ...rest] = key.split(":");
    values.push(await createStore(module, env).get(rest.join(":")));
  }
  return { values };
}

export default {
  /**
   * @param {Request} request
   * @param {any} env
   * @param {ExecutionContext} ctx
   */
  async fetch(request, env, ctx) {
    const body = await request.json();
    if (body.stats) {
      const t = { ...totals };
      totals.fetches = totals.invocations = 0;
      return Response.json(t);
    }
    totals.invocations++;
    const fetches = { n: 0 };
    const e = invocationEnv(env, ctx, fetches);
    try {
      const answer = body.bench ? await call(body, e) : body.keys ? await read(body, e) : await update(body, e);
      return Response.json({ ...answer, fetches: fetches.n });
    } catch (err) {
      return new Response(String(/** @type {any} */ (err)?.message ?? err), { status: 500 });
    } finally {
      ctx.waitUntil(closeMongo(e));
    }
  },

  /**
   * The bot's crons: the hourly drift-verifier (stopped by the guide before
   * the tee: DRIFT_VERIFIER=0), and a job of its own every five minutes
   * (a new loldle round), which gets the one line as fetch() does.
   * @param {ScheduledController} event
   * @param {any} env
   * @param {ExecutionContext} ctx
   */
  async scheduled(event, env, ctx) {
    const e = invocationEnv(env, ctx, { n: 0 });
    try {
      if (event.cron === "0 * * * *") {
        if (env.DRIFT_VERIFIER !== "0") await runDriftVerifier(e);
        return;
      }
      await createStore("loldle-emoji", e).put("round", `cron${event.scheduledTime}`);
    } finally {
      ctx.waitUntil(closeMongo(e));
    }
  },
};
