// Runs the test bot Worker (test/worker/bot.js) in workerd through
// miniflare, with the bindings of one mode, and the updates it is sent.
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { bridgeWorker, packageRoot } from "./bridge.js";

/**
 * With bridgeToken, the bridge Worker runs beside the bot over the same
 * KV namespace, listening on loopback (its URL is returned).
 * @param {Record<string, string>} vars the KVSHADOW_* settings
 * @param {{bridgeToken?: string}} [o]
 */
export async function startBot(vars, o = {}) {
  return startBots({ bot: vars }, o);
}

/**
 * Runs one bot Worker per name, each its own isolate (its own module
 * state, so its own cached stage) with its own settings, all over one KV
 * namespace; with bridgeToken, the bridge Worker beside them.
 * @param {Record<string, Record<string, string>>} bots name -> KVSHADOW_* settings
 * @param {{bridgeToken?: string, handleRuntimeStdio?: (out: import("node:stream").Readable, err: import("node:stream").Readable) => void}} [o]
 */
export async function startBots(bots, o = {}) {
  const ns = "bot-primary";
  const bridge = o.bridgeToken ? [bridgeWorker({ token: o.bridgeToken, kvNamespace: ns })] : [];
  const mf = new Miniflare({
    ...(o.bridgeToken ? { host: "127.0.0.1", port: 0 } : {}),
    ...(o.handleRuntimeStdio ? { handleRuntimeStdio: o.handleRuntimeStdio } : {}),
    workers: [
      ...bridge,
      ...Object.entries(bots).map(([name, vars]) => ({
        name,
        modules: true,
        modulesRoot: packageRoot,
        modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
        scriptPath: join(packageRoot, "test", "worker", "bot.js"),
        compatibilityDate: "2025-01-01",
        kvNamespaces: { KV: ns },
        bindings: vars,
      })),
    ],
  });
  const url = await mf.ready;
  return Object.assign(mf, { bridgeURL: o.bridgeToken ? new URL("/client/v4/", url).toString() : undefined });
}

/**
 * Bot-like traffic: users guessing, trading now and then, in order per
 * user, a few users at once.
 * @param {number} n
 * @param {number} users
 */
export function updates(n, users) {
  const words = ["apple", "crane", "slate", "pious", "lemon", "grape", "mango"];
  return Array.from({ length: n }, (_, seq) => ({
    seq,
    user: `u${seq % users}`,
    guess: words[(seq * 7 + 3) % words.length],
    trade: seq % 3 === 0 ? ["BTC", "ETH", "SOL"][seq % 9 === 0 ? 0 : seq % 2] : undefined,
  }));
}

/**
 * Sends the updates, `parallel` at a time, each user's in order.
 * @param {Miniflare} mf
 * @param {object[]} list
 * @param {number} parallel
 */
export async function drive(mf, list, parallel = 4) {
  const lanes = Array.from({ length: parallel }, () => []);
  for (const u of list) lanes[Number(u.user.slice(1)) % parallel].push(u); // a user's updates stay in order
  const answers = [];
  const bot = await mf.getWorker("bot");
  await Promise.all(
    lanes.map(async (lane) => {
      for (const u of lane) {
        const r = await bot.fetch("http://bot/", { method: "POST", body: JSON.stringify(u) });
        const text = await r.text();
        if (r.status !== 200) throw new Error(`update ${u.seq}: ${r.status} ${text}`);
        answers.push(JSON.parse(text));
      }
    }),
  );
  return answers;
}
