// For the Go flip test: runs bot Workers bot1..botN (KVSHADOW_BOTS, 3 by
// default), each its own isolate in tee mode with a short stage lease,
// and the bridge Worker, all over one miniflare KV namespace; prints
// {"bridge"}. Then each line of its standard input is one operation, JSON
// {"bot": "bot1", "op": "put"|"get"|"incr", "key", "value", "hold"}, run
// in order, and answered by one line: {"ok": true, "value"} or {"ok":
// false, "error", "code"}. It keeps the Workers up until its standard
// input closes. Settings from the environment: KVSHADOW_URL (the proxy's
// origin), KVSHADOW_TOKEN, KVSHADOW_NAMESPACE, KVSHADOW_BRIDGE_TOKEN,
// KVSHADOW_STAGE_TTL_MS, KVSHADOW_STAGE_TIMEOUT_MS (empty: the tee's
// default), and KVSHADOW_BOT_VARS, a JSON object of settings per bot that
// override those (a wrong token for one). What the Workers log comes out
// as lines {"log": "..."} between the answers.
import { createInterface } from "node:readline";
import { startBots } from "./bot.js";
import { answerLines, stopWhenInputEnds } from "./runner.js";

const env = process.env;
const vars = {
  KVSHADOW_MODE: "tee",
  KVSHADOW_URL: env.KVSHADOW_URL ?? "",
  KVSHADOW_TOKEN: env.KVSHADOW_TOKEN ?? "",
  KVSHADOW_NAMESPACE: env.KVSHADOW_NAMESPACE ?? "ns",
  KVSHADOW_STAGE_TTL_MS: env.KVSHADOW_STAGE_TTL_MS ?? "1000",
  KVSHADOW_STAGE_TIMEOUT_MS: env.KVSHADOW_STAGE_TIMEOUT_MS ?? "500",
};
const perBot = JSON.parse(env.KVSHADOW_BOT_VARS || "{}") ?? {};
const names = Array.from({ length: Number(env.KVSHADOW_BOTS ?? 3) }, (_, i) => `bot${i + 1}`);
/** @param {import("node:stream").Readable} stream */
const logLines = (stream) =>
  createInterface({ input: stream }).on("line", (line) => process.stdout.write(JSON.stringify({ log: line }) + "\n"));
const mf = await startBots(Object.fromEntries(names.map((n) => [n, { ...vars, ...(perBot[n] ?? {}) }])), {
  bridgeToken: env.KVSHADOW_BRIDGE_TOKEN,
  handleRuntimeStdio: (out, err) => {
    logLines(out);
    logLines(err);
  },
});
const workers = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await mf.getWorker(n)])));

stopWhenInputEnds(mf);
process.stdout.write(JSON.stringify({ bridge: mf.bridgeURL ?? "" }) + "\n");
answerLines(
  async (op) => {
    const r = await workers[op.bot].fetch("http://bot/", { method: "POST", body: JSON.stringify(op) });
    const text = await r.text();
    return r.status === 200 ? JSON.parse(text) : { ok: false, error: text };
  },
  (e) => ({ ok: false, error: String(e?.message ?? e) }),
);
