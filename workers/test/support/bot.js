// Runs the test bot Worker (test/worker/bot.js) in workerd through
// miniflare, with the bindings of one mode, and the updates it is sent.
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { packageRoot } from "./bridge.js";

/**
 * @param {Record<string, string>} vars the KVSHADOW_* settings
 * @param {{kvNamespace?: string, extraWorkers?: object[]}} [o]
 */
export async function startBot(vars, o = {}) {
  const mf = new Miniflare({
    workers: [
      {
        name: "bot",
        modules: true,
        modulesRoot: packageRoot,
        modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
        scriptPath: join(packageRoot, "test", "worker", "bot.js"),
        compatibilityDate: "2025-01-01",
        kvNamespaces: { KV: o.kvNamespace ?? "bot-primary" },
        bindings: vars,
      },
      ...(o.extraWorkers ?? []),
    ],
  });
  await mf.ready;
  return mf;
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
  await Promise.all(
    lanes.map(async (lane) => {
      for (const u of lane) {
        const r = await mf.dispatchFetch("http://bot/", { method: "POST", body: JSON.stringify(u) });
        const text = await r.text();
        if (r.status !== 200) throw new Error(`update ${u.seq}: ${r.status} ${text}`);
        answers.push(JSON.parse(text));
      }
    }),
  );
  return answers;
}
