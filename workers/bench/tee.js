// Benchmark: what the tee adds to a bot invocation in workerd (through
// miniflare). The same bot-like updates go, alternately, to the bot on its
// own binding and to the bot on the tee; it prints each one's p50 and p99
// invocation time, their ratio, and the requests the tee sent to the proxy
// per invocation (batches and stage reads), counted by the endpoint.
//   npm run bench              (KVSHADOW_BENCH_UPDATES=400 by default)
import { startBot, updates } from "../test/support/bot.js";
import { startRecorder } from "../test/support/ingest-recorder.js";

const n = Number(process.env.KVSHADOW_BENCH_UPDATES ?? 400);
const rec = await startRecorder({ token: "bench" });
const direct = await startBot({ KVSHADOW_MODE: "direct" });
const tee = await startBot({ KVSHADOW_MODE: "tee", KVSHADOW_URL: rec.url, KVSHADOW_TOKEN: "bench", KVSHADOW_NAMESPACE: "ns", KVSHADOW_SAMPLE: "0.05" });
const bots = { direct: await direct.getWorker("bot"), tee: await tee.getWorker("bot") };
const times = { direct: [], tee: [] };
let writes = 0;
const list = updates(n, 16);
for (let i = 0; i < list.length; i++) {
  const order = i % 2 === 0 ? ["direct", "tee"] : ["tee", "direct"];
  for (const mode of order) {
    const t0 = performance.now();
    const r = await bots[mode].fetch("http://bot/", { method: "POST", body: JSON.stringify(list[i]) });
    const body = await r.json();
    times[mode].push(performance.now() - t0);
    if (mode === "tee") writes += body.writes;
  }
}
// The batches go after the responses: wait until every copy is in.
const copies = () => rec.state.batches.reduce((s, b) => s + b.batch.copies.length, 0);
for (let i = 0; i < 400 && copies() < writes; i++) await new Promise((r) => setTimeout(r, 25));
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
const row = (m) => `${m.padEnd(7)} p50 ${pct(times[m], 0.5).toFixed(2)} ms  p99 ${pct(times[m], 0.99).toFixed(2)} ms`;
console.log(`${n} invocations each, alternating, one process (workerd through miniflare)`);
console.log(row("direct"));
console.log(row("tee"));
console.log(`ratio tee/direct: p50 ${(pct(times.tee, 0.5) / pct(times.direct, 0.5)).toFixed(3)}, p99 ${(pct(times.tee, 0.99) / pct(times.direct, 0.99)).toFixed(3)}`);
const batches = rec.state.batches.length;
console.log(`tee requests to the proxy: ${batches} batches + ${rec.state.stageReads} stage reads for ${n} invocations = ${((batches + rec.state.stageReads) / n).toFixed(3)} per invocation`);
console.log(`copies: ${copies()} of ${writes} writes (${(copies() / batches).toFixed(2)} per batch); sampled reads: ${rec.state.batches.reduce((s, b) => s + b.batch.reads.length, 0)}`);
await direct.dispose();
await tee.dispose();
await rec.stop();
