import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Miniflare } from "miniflare";
import { forgetStages, kvshadowTee } from "../src/index.js";
import { STAGE_KEY } from "../src/tee.js";
import { createStore } from "./seed/create-store.js";
import { invocation, startRecorder } from "./support/ingest-recorder.js";
import { startEmulator } from "./support/goserver.js";

/** The proxy's client token: the same for its REST front and its tee endpoints. */
let token;

describe("kvshadowTee", () => {
  let mf, KV, rec, emu;
  before(async () => {
    mf = new Miniflare({ modules: true, script: "export default { fetch() { return new Response(null) } }", kvNamespaces: ["KV"] });
    KV = await mf.getKVNamespace("KV");
    emu = await startEmulator();
    token = emu.token;
    rec = await startRecorder({ token, rest: emu.url });
  });
  after(async () => {
    await rec?.stop();
    await emu?.stop();
    await mf?.dispose();
  });
  beforeEach(() => {
    forgetStages();
    rec.state.batches = [];
    rec.state.stageReads = 0;
    rec.state.status = 200;
    rec.state.statuses = [];
    rec.state.stageStatus = 200;
    rec.state.stage = { stage: "dualwrite", authoritative: "primary" };
  });
  const tee = (ctx, more = {}) => kvshadowTee(KV, { url: rec.url, token, namespaceId: "ns", accountId: "acc", sampleRate: 0, ...more }, ctx);

  test("writes go to the binding; their copies go as one batch after the response, in order", async () => {
    const ctx = invocation();
    // A quiet spell longer than any put here takes on a loaded machine, so
    // that the five copies make one batch.
    const t = tee(ctx, { idleMs: 5000 });
    await t.put("a", "one", { expirationTtl: 120, metadata: { m: 1 } });
    const putAt = Date.now();
    await t.put("b", new Uint8Array([0, 255]));
    await t.put("c", new Response("streamed").body);
    const at = Math.floor(Date.now() / 1000) + 600;
    await t.put("d", "abs", { expiration: at });
    await t.delete("b");
    // The binding holds the writes before any copy is sent.
    assert.equal(await KV.get("a"), "one");
    assert.equal(await KV.get("c"), "streamed");
    assert.equal(await KV.get("b"), null);
    assert.equal(rec.state.batches.length, 0);
    await ctx.done();
    assert.equal(rec.state.batches.length, 1);
    const { copies, reads, namespace } = rec.state.batches[0].batch;
    assert.equal(namespace, "ns");
    assert.deepEqual(reads, []);
    assert.deepEqual(copies.map((c) => c.key), ["a", "b", "c", "d", "b"]);
    assert.equal(Buffer.from(copies[0].value, "base64").toString(), "one");
    assert.ok(Math.abs(copies[0].expiration - (Math.floor(putAt / 1000) + 120)) <= 2);
    assert.deepEqual(copies[0].metadata, { m: 1 });
    assert.deepEqual([...Buffer.from(copies[1].value, "base64")], [0, 255]);
    assert.equal(copies[1].expiration, undefined);
    assert.equal(Buffer.from(copies[2].value, "base64").toString(), "streamed");
    assert.equal(copies[3].expiration, at);
    assert.deepEqual(Object.keys(copies[4]).sort(), ["acked_at", "deleted", "key"]);
    for (let i = 1; i < copies.length; i++) assert.ok(copies[i].acked_at >= copies[i - 1].acked_at);
    assert.equal(t.stats.requests, 2, "one stage read and one batch");
    assert.deepEqual({ ...t.stats, requests: 0 }, { batches: 1, copies: 5, reads: 0, failed: 0, requests: 0, retries: 0, refused: 0, excluded: 0 });
  });

  test("a write the binding refuses throws its error and sends no copy", async () => {
    const ctx = invocation();
    const t = tee(ctx);
    await assert.rejects(t.put("k", "v", { expirationTtl: 30 }), /Invalid expiration_ttl of 30/);
    await assert.rejects(t.put("", "v"), TypeError);
    await assert.rejects(t.put("k", /** @type {any} */ ({})), /accepts only strings/);
    await ctx.done();
    assert.equal(rec.state.batches.length, 0);
  });

  test("sampled reads send key, digest, length and expiry, never the value; values come back as the binding gives them", async () => {
    await KV.put("r:json", '{"secret":"hunter2"}', { expirationTtl: 300 });
    const ctx = invocation();
    const t = tee(ctx, { sampleRate: 1 });
    assert.deepEqual(await t.get("r:json", "json"), { secret: "hunter2" });
    assert.equal(await t.get("r:json"), '{"secret":"hunter2"}');
    assert.equal(new TextDecoder().decode(await t.get("r:json", { type: "arrayBuffer" })), '{"secret":"hunter2"}');
    assert.equal(await new Response(await t.get("r:json", "stream")).text(), '{"secret":"hunter2"}');
    assert.deepEqual(await t.getWithMetadata("r:json", "json"), { value: { secret: "hunter2" }, metadata: null, cacheStatus: null });
    assert.equal(await t.get("r:none"), null);
    await assert.rejects(t.get("r:json", "bogus"), TypeError);
    await ctx.done();
    assert.equal(rec.state.batches.length, 1);
    const { raw, batch } = rec.state.batches[0];
    assert.ok(!raw.includes("hunter2"), "a value was sent");
    const sha = createHash("sha256").update('{"secret":"hunter2"}').digest("hex");
    assert.equal(batch.reads.length, 6);
    for (const r of batch.reads.slice(0, 5)) {
      assert.equal(r.key, "r:json");
      assert.equal(r.found, true);
      assert.equal(r.sha256, sha);
      assert.equal(r.length, 20);
      assert.ok(Math.abs(r.expiration - (Math.floor(Date.now() / 1000) + 300)) <= 2);
    }
    assert.deepEqual(Object.keys(batch.reads[5]).sort(), ["found", "key", "read_at"]);
    assert.equal(batch.reads[5].found, false);
  });

  test("a sampled read whose expiry cannot be learned is not sent", async () => {
    await KV.put("x:listed", "v", { expirationTtl: 300 });
    await KV.put("x:unlisted", "v", { expirationTtl: 300 });
    const ctx = invocation();
    const kv = {
      get: (/** @type {any} */ k, /** @type {any} */ o) => KV.get(k, o),
      getWithMetadata: (/** @type {any} */ k, /** @type {any} */ o) => KV.getWithMetadata(k, o),
      /** @param {any} o */
      list: (o) => (o.prefix === "x:listed" ? KV.list(o) : Promise.reject(new Error("list failed"))),
    };
    const t = kvshadowTee(/** @type {any} */ (kv), { url: rec.url, token, namespaceId: "ns", accountId: "acc", sampleRate: 1 }, ctx);
    assert.equal(await t.get("x:unlisted"), "v");
    assert.equal(await t.get("x:listed"), "v");
    await ctx.done();
    const { reads } = rec.state.batches[0].batch;
    assert.deepEqual(reads.map((/** @type {any} */ r) => r.key), ["x:listed"]);
    assert.ok(reads[0].expiration > Date.now() / 1000);
  });

  test("unsampled reads and lists add no request at all", async () => {
    await KV.put("u:1", "v");
    const ctx = invocation();
    const t = tee(ctx, { sampleRate: 0 });
    assert.equal(await t.get("u:1"), "v");
    assert.deepEqual((await t.list({ prefix: "u:" })).keys.map((k) => k.name), ["u:1"]);
    await ctx.done();
    assert.equal(rec.state.batches.length, 0);
    assert.equal(t.stats.requests, 1, "only the isolate's first stage read");
    const t2 = tee(invocation());
    await t2.get("u:1");
    assert.equal(t2.stats.requests, 0, "the stage is cached for the isolate");
  });

  test("a full batch goes at once; the rest when the invocation goes quiet", async () => {
    const ctx = invocation();
    const t = tee(ctx, { maxCopies: 10, idleMs: 5000 });
    for (let i = 0; i < 25; i++) await t.put(`f:${String(i).padStart(2, "0")}`, "v");
    await ctx.done();
    assert.deepEqual(rec.state.batches.map((b) => b.batch.copies.length), [10, 10, 5]);
    assert.deepEqual(rec.state.batches.flatMap((b) => b.batch.copies.map((c) => c.key)), Array.from({ length: 25 }, (_, i) => `f:${String(i).padStart(2, "0")}`));
  });

  test("flush sends what is queued now", async () => {
    const ctx = invocation();
    const t = tee(ctx, { idleMs: 60_000 });
    await t.put("fl", "v");
    await t.flush();
    assert.equal(rec.state.batches.length, 1);
    await ctx.done();
    assert.equal(rec.state.batches.length, 1);
  });

  test("a batch the proxy cannot take now is sent again within the invocation; one it refuses is not", async () => {
    const warn = console.warn;
    const warned = [];
    console.warn = (m) => warned.push(m);
    try {
      const sleeps = [];
      const sleep = async (/** @type {number} */ ms) => void sleeps.push(ms);
      rec.state.statuses = [503, 429];
      let ctx = invocation();
      let t = tee(ctx, { sleep });
      await t.put("retry", "v");
      await ctx.done();
      assert.deepEqual(sleeps, [100, 400]);
      assert.deepEqual([t.stats.batches, t.stats.copies, t.stats.retries, t.stats.failed], [1, 1, 2, 0]);
      assert.deepEqual(rec.state.batches.flatMap((b) => b.batch.copies.map((c) => c.key)), ["retry"]);

      rec.state.statuses = [503, 503, 503, 503, 503];
      ctx = invocation();
      t = tee(ctx, { sleep });
      await t.put("down", "v");
      assert.equal(await KV.get("down"), "v", "the write is in the binding, the authoritative store of its stage");
      await ctx.done();
      assert.deepEqual([t.stats.copies, t.stats.retries, t.stats.failed], [0, 4, 1]);
      assert.deepEqual(sleeps.slice(2), [100, 400, 1500, 3000]);

      // The copy that failed goes first in the isolate's next batch.
      rec.state.batches = [];
      ctx = invocation();
      t = tee(ctx, { sleep });
      await t.put("after", "v");
      await ctx.done();
      assert.deepEqual(rec.state.batches.flatMap((b) => b.batch.copies.map((c) => c.key)), ["down", "after"]);

      rec.state.statuses = [400];
      ctx = invocation();
      t = tee(ctx, { sleep });
      await t.put("bad", "v");
      await ctx.done();
      assert.deepEqual([t.stats.retries, t.stats.failed], [0, 1], "a refused batch is not sent again");
    } finally {
      console.warn = warn;
    }
    assert.equal(warned.length, 2);
    assert.ok(warned.every((w) => !w.includes("down") && !w.includes("bad") && w.includes("kvshadow_tee_send_failed")));
  });

  test("no stage answer: the binding serves while there is no stage key; from the handover on every call is refused with the proxy's reason, logged once", async () => {
    const dead = () => kvshadowTee(KV, { url: "http://127.0.0.1:1", token, sampleRate: 0 }, invocation());
    await KV.put("dead:r", "before");
    const d = dead();
    await d.put("dead:w", "v");
    assert.equal(await KV.get("dead:w"), "v", "no stage key: Workers KV is authoritative, the binding serves");
    assert.equal(await d.get("dead:r"), "before");
    // The proxy never writes a stage before the handover there (it deletes
    // the key on the way back to shadow): any value is one it did not write.
    await KV.put(STAGE_KEY, "shadow");
    await assert.rejects(dead().get("dead:r"), (e) => e.code === "kvshadow_stage_unknown" && /binding says shadow/.test(e.message));

    await KV.put(STAGE_KEY, "handover");
    const warn = console.warn;
    const warned = [];
    console.warn = (m) => warned.push(m);
    try {
      forgetStages();
      const h = dead();
      const refused = (op) => (e) => e.code === "kvshadow_stage_unknown" && e.status === 503 && new RegExp(`KV ${op} failed: 503 kvshadow-proxy unreachable`).test(e.message);
      await assert.rejects(h.put("dead:w2", "v"), refused("PUT"));
      await assert.rejects(h.delete("dead:r"), refused("DELETE"));
      await assert.rejects(h.get("dead:r"), refused("GET"));
      assert.equal(await KV.get("dead:w2"), null, "the binding was written");
      assert.equal(await KV.get("dead:r"), "before", "the binding was deleted from");
      assert.equal(h.stats.refused, 3);

      // A proxy that refuses the token says so, and a fresh isolate does
      // not read a binding that may be frozen.
      forgetStages();
      rec.state.stageStatus = 401;
      const w = tee(invocation());
      await assert.rejects(w.get("dead:r"), (e) => e.status === 503 && /KV GET failed: 503 kvshadow-proxy refused the token \(401\)/.test(e.message));
      await assert.rejects(w.get("dead:r"), (e) => /refused the token \(401\)/.test(e.message));
    } finally {
      console.warn = warn;
      await KV.delete(STAGE_KEY);
    }
    assert.equal(warned.length, 2, "each reason is logged once by the isolate");
    assert.ok(warned.every((m) => m.includes("kvshadow_tee_stage_unknown") && !m.includes("dead:")));
  });

  test("a stage known once and then not answered: calls on the binding stop at its lease once the handover began, calls through the proxy go on", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const ctx = invocation();
    const t = tee(ctx, { stageTtlMs: 50, now });
    await t.put("lease:1", "v");
    assert.equal(await KV.get("lease:1"), "v");
    rec.state.stageStatus = 503;
    clock += 50;
    await t.put("lease:2", "v"); // the lease still holds: no stage read
    assert.equal(rec.state.stageReads, 1);
    clock += 1;
    await KV.put(STAGE_KEY, "handover");
    try {
      await assert.rejects(t.put("lease:3", "v"), (e) => e.code === "kvshadow_stage_unknown" && /answered the stage with 503/.test(e.message));
      assert.equal(await KV.get("lease:3"), null);
      assert.equal(rec.state.stageReads, 2, "the write asked for the stage first");
      await assert.rejects(t.get("lease:1"), (e) => e.code === "kvshadow_stage_unknown", "a read does not serve a binding that is no longer authoritative");
    } finally {
      await KV.delete(STAGE_KEY);
    }
    // This isolate saw the handover: the key gone is no reason to serve the
    // binding; the proxy's answer that the binding serves again is.
    await assert.rejects(t.put("lease:3", "v"), (e) => e.code === "kvshadow_stage_unknown" && /says nothing, though this isolate saw the handover/.test(e.message));
    rec.state.stageStatus = 200;
    await t.put("lease:3", "v");
    assert.equal(await KV.get("lease:3"), "v");
    await ctx.done();

    forgetStages();
    rec.state.stageStatus = 200;
    rec.state.stage = { stage: "live", authoritative: "shadow", route: "proxy", generation: 9 };
    const p = tee(invocation(), { stageTtlMs: 50, now });
    await p.put("lease:4", "through the proxy");
    rec.state.stageStatus = 503;
    clock += 51;
    await p.put("lease:4", "still through the proxy");
    assert.equal(await KV.get("lease:4"), null);
    assert.equal(await p.get("lease:4"), "still through the proxy");
  });

  test("a stage key deleted behind the proxy's back: an isolate that saw the handover refuses rather than serve its binding; a fresh one serves it until the proxy writes the key again", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    rec.state.stage = { stage: "shadow", authoritative: "primary", route: "binding" };
    const ctx = invocation();
    const seen = tee(ctx, { stageTtlMs: 50, now });
    await seen.put("gone:1", "in shadow"); // the proxy said binding
    rec.state.stageStatus = 503; // cut off from the proxy from here on
    await KV.put(STAGE_KEY, "handover");
    clock += 51;
    const refused = (e) => e.code === "kvshadow_stage_unknown" && e.status === 503;
    try {
      await assert.rejects(seen.put("gone:2", "v"), refused, "the key says handover");
      await KV.delete(STAGE_KEY); // through the bot's own binding, say
      for (const call of [() => seen.put("gone:2", "v"), () => seen.get("gone:1"), () => seen.delete("gone:1")]) {
        await assert.rejects(call(), (e) => refused(e) && /says nothing, though this isolate saw the handover/.test(e.message));
      }
      assert.equal(await KV.get("gone:2"), null, "the binding was written");
      assert.equal(await KV.get("gone:1"), "in shadow");
      assert.equal(seen.stats.refused, 4);
      // A fresh isolate (no module state: here, another namespace's) has
      // nothing to go by: what protects it is the proxy's rewrite of the
      // key within its repair interval, after which it refuses too.
      const fresh = tee(ctx, { stageTtlMs: 50, now, namespaceId: "ns-fresh" });
      await fresh.put("gone:3", "v");
      assert.equal(await KV.get("gone:3"), "v");
      await KV.put(STAGE_KEY, "handover");
      clock += 51;
      await assert.rejects(fresh.put("gone:3", "w"), refused);
    } finally {
      await KV.delete(STAGE_KEY);
    }
    // Once the proxy answers, its route decides.
    rec.state.stageStatus = 200;
    rec.state.stage = { stage: "live", authoritative: "shadow", route: "proxy" };
    await seen.put("gone:4", "through the proxy");
    assert.equal(await KV.get("gone:4"), null);
    await ctx.done(); // the copies sent, not left for the next test
  });

  test("a proxy that never answers costs a call at most stageTimeoutMs; reads after it wait no more", async () => {
    const { createServer } = await import("node:net");
    const sockets = [];
    const silent = createServer((sock) => sockets.push(sock)); // accepts, never answers
    await new Promise((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${silent.address().port}`;
      const t = kvshadowTee(KV, { url, token, sampleRate: 0, stageTimeoutMs: 100 }, invocation());
      await t.put("silent", "v"); // would hang without the timeout; then the binding serves (no stage key)
      const t2 = kvshadowTee(KV, { url, token, sampleRate: 0, stageTimeoutMs: 100 }, invocation());
      await t2.get("silent");
      await t2.get("silent");
      assert.equal(t.stats.requests + t2.stats.requests, 1, "one stage read for the failure, not one per read");
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise((r) => silent.close(r));
    }
  });

  test("when MongoDB is authoritative, reads and writes go through the proxy, not the binding", async () => {
    rec.state.stage = { stage: "live", authoritative: "shadow" };
    const ctx = invocation();
    const t = tee(ctx);
    await t.put("live:k", "through the proxy", { expirationTtl: 600 });
    assert.equal(await KV.get("live:k"), null, "the binding was written");
    assert.equal(await t.get("live:k"), "through the proxy");
    assert.deepEqual((await t.list({ prefix: "live:" })).keys.map((k) => k.name), ["live:k"]);
    await t.delete("live:k");
    assert.equal(await t.get("live:k"), null);
    await ctx.done();
    assert.equal(rec.state.batches.length, 0, "no copies in proxy mode");
  });

  test("a write on a stage older than its lease reads the stage first: an idle isolate's next write follows a flip", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    await tee(invocation(), { stageTtlMs: 50, now }).get("s");
    assert.equal(rec.state.stageReads, 1);
    clock += 50;
    const ctx1 = invocation();
    await tee(ctx1, { stageTtlMs: 50, now }).put("idle:1", "v");
    await ctx1.done();
    assert.equal(rec.state.stageReads, 1, "within the lease no stage is read");
    rec.state.stage = { stage: "handover", authoritative: "primary", route: "proxy", generation: 4 };
    clock += 1; // idle past the lease, then a write
    const ctx = invocation();
    await tee(ctx, { stageTtlMs: 50, now }).put("idle:2", "through the proxy");
    assert.equal(rec.state.stageReads, 2);
    assert.equal(await KV.get("idle:2"), null, "the write went to the binding on an expired stage");
    await ctx.done();
    assert.equal(ctx.count, 0, "no copy was queued");
    assert.equal(await tee(invocation(), { stageTtlMs: 50, now }).get("idle:2"), "through the proxy");
  });

  test("a read on a binding stage older than its lease reads the stage first; one through the proxy reads it after the response", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    await KV.put("rd", "binding");
    assert.equal(await tee(invocation(), { stageTtlMs: 50, now }).get("rd"), "binding");
    rec.state.stage = { stage: "live", authoritative: "shadow", route: "proxy", generation: 6 };
    clock += 51;
    const w = tee(invocation(), { stageTtlMs: 50, now });
    assert.equal(await w.get("rd"), null, "a stale binding stage was read from, not the proxy (which never had rd)");
    assert.equal(rec.state.stageReads, 2);
    await w.put("rd", "proxy");
    rec.state.stage = { stage: "handover", authoritative: "primary", route: "proxy", generation: 7 };
    clock += 51;
    const ctx = invocation();
    assert.equal(await tee(ctx, { stageTtlMs: 50, now }).get("rd"), "proxy");
    assert.equal(ctx.count, 1, "the stage read was left to waitUntil");
    await ctx.done();
    assert.equal(rec.state.stageReads, 3, "the stage was read after the response");
  });

  test("the stage answer's route decides, else authoritative; an answer without a known route is no answer", async () => {
    const cases = [
      [{ stage: "handover", authoritative: "primary", route: "proxy", generation: 3 }, "proxy"],
      [{ stage: "shadow", authoritative: "primary", route: "binding", generation: 2 }, "binding"],
      [{ stage: "live", authoritative: "shadow" }, "proxy"],
      [{ stage: "shadow", authoritative: "primary" }, "binding"],
    ];
    for (const [i, [stage, want]] of cases.entries()) {
      forgetStages();
      rec.state.stage = stage;
      const ctx = invocation();
      await tee(ctx).put(`route:${i}`, "v");
      await ctx.done();
      assert.equal((await KV.get(`route:${i}`)) === null ? "proxy" : "binding", want, JSON.stringify(stage));
    }
    forgetStages();
    rec.state.stage = { stage: "later", authoritative: "primary", route: "elsewhere" };
    await KV.put(STAGE_KEY, "handover");
    try {
      await assert.rejects(tee(invocation()).put("route:x", "v"), (e) => e.code === "kvshadow_stage_unknown" && /no route the tee knows/.test(e.message));
    } finally {
      await KV.delete(STAGE_KEY);
    }
  });

  test("the proxy's lease_ms shortens the tee's lease, never lengthens it", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    rec.state.stage = { stage: "shadow", authoritative: "primary", route: "binding", lease_ms: 20 };
    const put = async (k) => {
      const ctx = invocation();
      await tee(ctx, { stageTtlMs: 50, now }).put(k, "v");
      await ctx.done();
    };
    await put("lease:a");
    clock += 20;
    await put("lease:b");
    assert.equal(rec.state.stageReads, 1, "within the proxy's lease");
    clock += 1;
    await put("lease:c");
    assert.equal(rec.state.stageReads, 2, "past the proxy's lease of 20 ms, not the tee's 50");
    forgetStages();
    rec.state.stage = { stage: "shadow", authoritative: "primary", route: "binding", lease_ms: 500 };
    await put("lease:d");
    clock += 51;
    await put("lease:e");
    assert.equal(rec.state.stageReads, 4, "past the tee's own 50 ms, though the proxy said 500");
  });

  test("a copy carries the generation of the stage it was routed on, when the proxy says one", async () => {
    rec.state.stage = { stage: "shadow", authoritative: "primary", route: "binding", generation: 5 };
    let ctx = invocation();
    let t = tee(ctx);
    await t.put("gen:1", "v");
    await t.delete("gen:1");
    await ctx.done();
    const copies = (/** @type {string} */ key) => rec.state.batches.flatMap((b) => b.batch.copies).filter((c) => c.key === key);
    assert.deepEqual(copies("gen:1").map((c) => c.generation), [5, 5]);
    forgetStages();
    rec.state.stage = { stage: "shadow", authoritative: "primary", generation: 0 };
    ctx = invocation();
    t = tee(ctx);
    await t.put("gen:2", "v");
    await ctx.done();
    assert.ok(!("generation" in copies("gen:2")[0]), "a proxy that says no generation may refuse the field");
  });

  test("keys under an excluded prefix (its own, the proxy's answer's, __kvshadow:) are written to the binding alone, their copies and reads counted, never sent", async () => {
    rec.state.stage = { stage: "shadow", authoritative: "primary", route: "binding", exclude_prefixes: ["__kvshadow:", "__retry:"] };
    const ctx = invocation();
    const t = tee(ctx, { sampleRate: 1, excludePrefixes: ["__audit:"] });
    await t.put("__retry:mongo-failed:wordle:g:1", "queued");
    await t.put("__audit:1", "mine");
    await t.put("__kvshadow:outbox", "kvshadow's");
    await t.delete("__retry:mongo-failed:wordle:g:0");
    await t.put("wordle:g", "data");
    assert.equal(await t.get("__retry:mongo-failed:wordle:g:1"), "queued");
    await ctx.done();
    assert.equal(await KV.get("__retry:mongo-failed:wordle:g:1"), "queued", "the binding has it");
    assert.equal(await KV.get("__audit:1"), "mine");
    const sent = rec.state.batches.flatMap((b) => [...b.batch.copies, ...b.batch.reads]).map((c) => c.key);
    assert.deepEqual(sent, ["wordle:g"]);
    assert.equal(t.stats.excluded, 5, "four copies and one read");
    assert.throws(() => tee(invocation(), { excludePrefixes: [""] }), TypeError);
  });

  test("a 409 from ingest (the stage moved) makes the next call read the stage again", async () => {
    const ctx = invocation();
    const t = tee(ctx);
    await t.put("c409", "v");
    rec.state.status = 409;
    const warn = console.warn;
    console.warn = () => {};
    try {
      await ctx.done();
    } finally {
      console.warn = warn;
    }
    assert.equal(rec.state.stageReads, 1);
    const ctx2 = invocation();
    await tee(ctx2).get("x");
    await ctx2.done();
    assert.equal(rec.state.stageReads, 2);
  });

  test("the seed's CFKVStore and createStore run unchanged on the tee", async () => {
    const ctx = invocation();
    const store = createStore("wordle", { KV: tee(ctx) });
    await store.putJSON("games:1", { word: "apple" }, { expirationTtl: 3600 });
    await store.put("games:2", "x");
    assert.deepEqual(await store.getJSON("games:1"), { word: "apple" });
    assert.deepEqual((await store.list({ prefix: "games:" })).keys, ["games:1", "games:2"]);
    await store.delete("games:2");
    await ctx.done();
    assert.deepEqual(rec.state.batches[0].batch.copies.map((c) => [c.key, !!c.deleted]), [["wordle:games:1", false], ["wordle:games:2", false], ["wordle:games:2", true]]);
  });

  test("arguments it cannot use are refused at once", () => {
    assert.throws(() => kvshadowTee(/** @type {any} */ (null), { url: rec.url, token }, invocation()), TypeError);
    assert.throws(() => kvshadowTee(KV, { url: rec.url, token }, /** @type {any} */ ({})), TypeError);
    assert.throws(() => kvshadowTee(KV, /** @type {any} */ ({ url: "nope", token }), invocation()), TypeError);
    assert.throws(() => kvshadowTee(KV, /** @type {any} */ ({ url: rec.url, token: "a b" }), invocation()), TypeError);
    assert.throws(() => kvshadowTee(KV, /** @type {any} */ ({ url: rec.url }), invocation()), TypeError);
  });
});
