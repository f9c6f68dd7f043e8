// The package inside workerd (through miniflare): a bot Worker that uses
// the seed's createStore over the proxy binding, and over the tee of its
// own miniflare KV namespace, driven with bot-like traffic.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { kvshadowBinding } from "../src/index.js";
import { drive, startBot, updates } from "./support/bot.js";
import { startProxy } from "./support/goserver.js";
import { startRecorder } from "./support/ingest-recorder.js";

/** Every key of a KVNamespace with its value and expiry. */
async function dump(KV) {
  const out = new Map();
  let cursor;
  for (;;) {
    const page = await KV.list({ cursor });
    for (const k of page.keys) out.set(k.name, { value: await KV.get(k.name), expiration: k.expiration });
    if (page.list_complete) return out;
    cursor = page.cursor;
  }
}

/**
 * @param {Map} got
 * @param {Map} want
 * @param {number} slack seconds two expiries may differ: the runs being
 *   compared wrote them at different times
 */
function sameContents(got, want, what, slack = 2) {
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${what}: keys`);
  for (const [k, w] of want) {
    const g = got.get(k);
    assert.equal(g.value, w.value, `${what}: value of ${k}`);
    assert.equal(g.expiration === undefined, w.expiration === undefined, `${what}: expiry of ${k}`);
    if (w.expiration !== undefined) assert.ok(Math.abs(g.expiration - w.expiration) <= slack, `${what}: expiry of ${k}: ${g.expiration} vs ${w.expiration}`);
  }
}

const traffic = updates(120, 8);

describe("the bot in workerd", () => {
  let reference;
  before(async () => {
    // The bot as it is today, on its own binding, one update at a time.
    const mf = await startBot({ KVSHADOW_MODE: "direct" });
    try {
      await drive(mf, traffic, 1);
      reference = await dump(await mf.getKVNamespace("KV"));
    } finally {
      await mf.dispose();
    }
    assert.ok(reference.size > 20, "the traffic writes keys");
  });

  test("(a) over the proxy binding, the server ends up holding what the binding would", async () => {
    const srv = await startProxy();
    try {
      const mf = await startBot({ KVSHADOW_MODE: "binding", KVSHADOW_URL: srv.url, KVSHADOW_TOKEN: srv.token, KVSHADOW_ACCOUNT: srv.accountId, KVSHADOW_NAMESPACE: srv.namespaceId });
      try {
        await drive(mf, traffic, 1);
      } finally {
        await mf.dispose();
      }
      sameContents(await dump(kvshadowBinding(srv)), reference, "proxy binding", 120);
    } finally {
      await srv.stop();
    }
  });

  describe("(b) over the tee", () => {
    let rec, mf, KV;
    before(async () => {
      rec = await startRecorder({ token: "tee-token" });
      mf = await startBot({ KVSHADOW_MODE: "tee", KVSHADOW_URL: rec.url, KVSHADOW_TOKEN: "tee-token", KVSHADOW_NAMESPACE: "ns", KVSHADOW_SAMPLE: "0.5" });
      KV = await mf.getKVNamespace("KV");
      const answers = await drive(mf, traffic, 4);
      writes = answers.reduce((n, a) => n + a.writes, 0);
    });
    after(async () => {
      await mf?.dispose();
      await rec?.stop();
    });

    /** How many writes the traffic made: the bot answers with what it did. */
    const expectedWrites = () => writes;
    let writes = 0;

    /** The copies applied in acknowledged order: what the proxy learns. */
    function replay() {
      const copies = rec.state.batches.flatMap((b) => b.batch.copies).sort((a, b) => a.acked_at - b.acked_at);
      const m = new Map();
      for (const c of copies) {
        if (c.deleted) m.delete(c.key);
        else m.set(c.key, { value: Buffer.from(c.value, "base64").toString(), expiration: c.expiration });
      }
      return { m, copies };
    }

    test("the copies the proxy receives rebuild exactly what the binding holds", async () => {
      const binding = await dump(KV);
      // The batches go after the responses: wait until they are all in.
      for (let i = 0; i < 200 && replay().copies.length < expectedWrites(); i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(replay().copies.length, writes, "a copy for each write");
      sameContents(replay().m, binding, "tee copies");
      // The shared key may differ from the sequential run by order; the rest is the reference.
      const ref = new Map(reference);
      const got = new Map(binding);
      ref.delete("loldle-emoji:round");
      got.delete("loldle-emoji:round");
      sameContents(got, ref, "tee binding", 120);
    });

    test("sampled reads report digests that match what the binding held when read", () => {
      const { copies } = replay();
      const reads = rec.state.batches.flatMap((b) => b.batch.reads);
      assert.ok(reads.length > 20, `sampled reads: ${reads.length}`);
      let checked = 0;
      for (const r of reads.filter((r) => r.key.startsWith("wordle:games:"))) {
        const before = copies.filter((c) => c.key === r.key && c.acked_at <= r.read_at);
        const strictly = copies.filter((c) => c.key === r.key && c.acked_at < r.read_at);
        const ok = [before.at(-1), strictly.at(-1)].some((c) => {
          if (!c || c.deleted) return !r.found;
          const bytes = Buffer.from(c.value, "base64");
          return r.found && r.sha256 === createHash("sha256").update(bytes).digest("hex") && r.length === bytes.length;
        });
        assert.ok(ok, `read of ${r.key} at ${r.read_at} matches no write before it`);
        checked++;
      }
      assert.ok(checked > 5, `checked ${checked}`);
      assert.ok(rec.state.batches.every((b) => !b.raw.includes("apple")), "a value was sent in a read digest");
    });

    test("the tee adds about one request per invocation", () => {
      const invocations = traffic.length;
      const batches = rec.state.batches.length;
      // Every update writes, so each invocation sends at least its own
      // batch; one more only when a write came after a quiet spell.
      assert.ok(batches >= invocations && batches <= 2 * invocations, `${batches} batches for ${invocations} invocations`);
      assert.ok(rec.state.stageReads <= 2, `${rec.state.stageReads} stage reads`);
    });
  });
});
