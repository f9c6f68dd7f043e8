// Benchmark: what the tee adds to a bot invocation in workerd (through
// miniflare), beside the bot on its bare binding and beside the bot's own
// dual write (its DualKVStore: every write awaits the binding and MongoDB,
// Promise.allSettled). The same bot-like updates go to the three, in turn
// (the order rotating every update), with MongoDB stood in for by an HTTP
// endpoint that answers after 20 ms and then after 200 ms (the tee's copy
// goes to the proxy in waitUntil, so that latency is not the bot's). It
// prints each one's p50 and p99 invocation time, the ratios to the bare
// binding, and the requests the tee sent to the proxy per invocation
// (batches and stage reads), counted by the endpoint; then the same as
// `go test -bench` lines, which `make bench` summarises over its runs.
//   npm run bench              (KVSHADOW_BENCH_UPDATES=400 by default)
import { createServer } from "node:http";
import { startBot, updates } from "../test/support/bot.js";
import { startRecorder } from "../test/support/ingest-recorder.js";

const n = Number(process.env.KVSHADOW_BENCH_UPDATES ?? 400);

/** An HTTP endpoint that answers every request after ms. */
async function slowEndpoint(ms) {
  const server = createServer((req, res) => {
    req.resume();
    setTimeout(() => res.writeHead(200).end("{}"), ms);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = /** @type {any} */ (server.address());
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((r) => server.close(r)) };
}

const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
const lines = [];

for (const mongoMs of [20, 200]) {
  const rec = await startRecorder({ token: "bench" });
  const mongo = await slowEndpoint(mongoMs);
  const started = {
    direct: await startBot({ KVSHADOW_MODE: "direct" }),
    tee: await startBot({ KVSHADOW_MODE: "tee", KVSHADOW_URL: rec.url, KVSHADOW_TOKEN: "bench", KVSHADOW_NAMESPACE: "ns", KVSHADOW_SAMPLE: "0.05" }),
    dual: await startBot({ KVSHADOW_MODE: "dual", KVSHADOW_MONGO_URL: mongo.url }),
  };
  const modes = /** @type {const} */ (["direct", "tee", "dual"]);
  const bots = Object.fromEntries(await Promise.all(modes.map(async (m) => [m, await started[m].getWorker("bot")])));
  const times = { direct: [], tee: [], dual: [] };
  let writes = 0;
  const list = updates(n, 16);
  for (let i = 0; i < list.length; i++) {
    for (let k = 0; k < modes.length; k++) {
      const mode = modes[(i + k) % modes.length];
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
  const p50 = Object.fromEntries(modes.map((m) => [m, pct(times[m], 0.5)]));
  const p99 = Object.fromEntries(modes.map((m) => [m, pct(times[m], 0.99)]));
  const row = (m) => `${m.padEnd(7)} p50 ${p50[m].toFixed(2)} ms  p99 ${p99[m].toFixed(2)} ms`;
  const perCall = (rec.state.batches.length + rec.state.stageReads) / n;
  console.log(`MongoDB ${mongoMs} ms away: ${n} invocations each, in turn, one process (workerd through miniflare)`);
  for (const m of modes) console.log(row(m));
  console.log(`ratio to the bare binding, p50: tee ${(p50.tee / p50.direct).toFixed(3)}, the bot's own dual write ${(p50.dual / p50.direct).toFixed(3)}`);
  console.log(`tee requests to the proxy: ${rec.state.batches.length} batches + ${rec.state.stageReads} stage reads = ${perCall.toFixed(3)} per invocation; copies: ${copies()} of ${writes} writes`);
  lines.push(
    `BenchmarkWorkerdBotCall/mongo=${mongoMs}ms ${n} ${(p50.tee * 1e6).toFixed(0)} ns/op ${p50.direct.toFixed(3)} binding-p50-ms ${p50.tee.toFixed(3)} tee-p50-ms ${p50.dual.toFixed(3)} dualwrite-p50-ms ${(p50.tee / p50.direct).toFixed(4)} tee-ratio ${(p50.dual / p50.direct).toFixed(4)} dualwrite-ratio ${p99.tee.toFixed(3)} tee-p99-ms ${p99.dual.toFixed(3)} dualwrite-p99-ms ${perCall.toFixed(4)} tee-requests/call`,
  );
  for (const m of modes) await started[m].dispose();
  await rec.stop();
  await mongo.stop();
}
console.log("pkg: github.com/kvshadow/kvshadow/workers");
for (const l of lines) console.log(l);
