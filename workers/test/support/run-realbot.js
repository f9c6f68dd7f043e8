// For the rehearsal and the bot benchmark: the bot with the real bot's
// storage shape (test/realbot, bundled by wrangler for the mongodb driver)
// and the bridge Worker, in one workerd over one persisted KV namespace.
// It prints {"bridge"}, then answers one JSON line per command line:
//
//   {"cmd":"deploy","vars":{...}}   the bot redeployed with these vars (KV kept)
//   {"cmd":"go","from":S,"n":N}     N bot updates, 4 at a time, a user's in order ->
//                                   {writes, invocations, last: {key: value|null}, shared: [keys], fetches}
//   {"cmd":"cron","cron":"..."}     one scheduled() run of that cron
//   {"cmd":"read","keys":["m:k"]}   what the bot reads of keys, in one invocation -> {values}
//   {"cmd":"bench","n":N,"users":U} N calls (getJSON + putJSON), one at a time -> {ms: [...], fetches: [...]}
//   {"cmd":"stats"}                 kvshadow subrequests and invocations since the last stats,
//                                   those in ctx.waitUntil included -> {fetches, invocations}
//
// Environment: KVSHADOW_PERSIST (the KV data's folder), KVSHADOW_BRIDGE_TOKEN,
// KVSHADOW_PORT (the bridge's port; 0 picks one).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Miniflare } from "miniflare";
import { bridgeWorker, packageRoot } from "./bridge.js";
import { updates } from "./bot.js";
import { answerLines, stopWhenInputEnds } from "./runner.js";

const env = process.env;
const ns = "bot-primary";

/** Bundles test/realbot as `wrangler deploy` would. */
function bundle() {
  const out = mkdtempSync(join(tmpdir(), "kvshadow-realbot-"));
  const quiet = { ...env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "error", CI: "1", NO_UPDATE_NOTIFIER: "1" };
  execFileSync(join(packageRoot, "node_modules", ".bin", "wrangler"), ["deploy", "--dry-run", "--outdir", out, "-c", join(packageRoot, "test", "realbot", "wrangler.toml")], { env: quiet, stdio: ["ignore", "ignore", "inherit"] });
  return join(out, readdirSync(out).find((f) => f.endsWith(".js")) ?? "worker.js");
}

const script = bundle();
let port = Number(env.KVSHADOW_PORT ?? 0);
/** @param {Record<string, string>} vars */
function options(vars) {
  return {
    host: "127.0.0.1",
    port,
    kvPersist: env.KVSHADOW_PERSIST,
    // The bot's own log ([dual-kv] warnings and the like) only when asked.
    ...(env.KVSHADOW_BOT_LOG ? {} : { handleRuntimeStdio: (/** @type {any} */ out, /** @type {any} */ err) => (out.resume(), err.resume()) }),
    workers: [
      bridgeWorker({ token: env.KVSHADOW_BRIDGE_TOKEN ?? "", kvNamespace: ns }),
      { name: "bot", modules: true, modulesRoot: dirname(script), scriptPath: script, compatibilityDate: "2025-01-01", compatibilityFlags: ["nodejs_compat"], kvNamespaces: { KV: ns }, bindings: vars },
    ],
  };
}
const mf = new Miniflare(options({ STORAGE_PRIMARY: "kv", DUAL_WRITE: "1" }));
const url = await mf.ready;
port = Number(url.port);

/** @param {any} body */
async function send(body) {
  const bot = await mf.getWorker("bot");
  const r = await bot.fetch("http://bot/", { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${JSON.stringify(body)}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** @param {any} c */
async function command(c) {
  switch (c.cmd) {
    case "deploy":
      await mf.setOptions(options(c.vars));
      await mf.ready;
      return { deployed: true };
    case "go": {
      const list = updates(c.from + c.n, 8).slice(c.from);
      const lanes = Array.from({ length: 4 }, () => /** @type {any[]} */ ([]));
      for (const u of list) lanes[Number(u.user.slice(1)) % 4].push(u); // a user's updates in order
      /** @type {Record<string, string|null>} */
      const last = {};
      /** @type {Map<string, number>} */
      const laneOf = new Map();
      const shared = new Set();
      let writes = 0;
      let fetches = 0;
      await Promise.all(
        lanes.map(async (lane, i) => {
          for (const u of lane) {
            const a = await send(u);
            writes += a.written.length;
            fetches = Math.max(fetches, a.fetches);
            for (const [k, v] of a.written) {
              if ((laneOf.get(k) ?? i) !== i) shared.add(k);
              laneOf.set(k, i);
              last[k] = v;
            }
          }
        }),
      );
      // A key written from more than one lane at once has no one last value.
      for (const k of shared) delete last[k];
      return { writes, invocations: list.length, last, shared: [...shared], fetches };
    }
    case "cron": {
      const bot = await mf.getWorker("bot");
      const r = await bot.scheduled({ cron: c.cron, scheduledTime: new Date() });
      return { outcome: r.outcome };
    }
    case "read":
      return send({ keys: c.keys });
    case "stats":
      return send({ stats: true });
    case "bench": {
      const ms = [];
      const fetches = [];
      for (let i = 0; i < c.n; i++) {
        const began = performance.now();
        const a = await send({ bench: true, user: `b${i % (c.users ?? 8)}` });
        ms.push(performance.now() - began);
        fetches.push(a.fetches);
      }
      return { ms, fetches };
    }
  }
  throw new Error(`unknown command ${c.cmd}`);
}

stopWhenInputEnds(mf);
answerLines(command, (e) => ({ error: String(e?.message ?? e) }));
process.stdout.write(JSON.stringify({ bridge: new URL("/client/v4/", url).toString() }) + "\n");
