import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { kvshadowBinding } from "../src/index.js";
import { createStore } from "./seed/create-store.js";
import { servers } from "./support/servers.js";
import { startEmulator } from "./support/goserver.js";

/** A loopback port nothing listens on. */
async function closedPort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = /** @type {any} */ (srv.address());
  await new Promise((r) => srv.close(r));
  return port;
}

const now = () => Math.floor(Date.now() / 1000);

/** A fetch that counts what it sends. */
function countingFetch() {
  const f = /** @type {any} */ (async (input, init) => {
    f.calls++;
    return fetch(input, init);
  });
  f.calls = 0;
  return f;
}

/** @param {ReadableStream} s */
async function readAll(s) {
  return new Uint8Array(await new Response(s).arrayBuffer());
}

for (const server of servers) {
  describe(`kvshadowBinding against ${server.name}`, () => {
    /** @type {import("./support/servers.js").Server} */
    let srv;
    /** @type {ReturnType<typeof kvshadowBinding>} */
    let KV;
    let fetchCount;
    let run = 0;
    /** A fresh prefix per test, on one server. */
    const p = () => `t${++run}:`;
    before(async () => {
      srv = await server.start();
      fetchCount = countingFetch();
      KV = kvshadowBinding({ url: srv.url, token: srv.token, accountId: srv.accountId, namespaceId: srv.namespaceId, fetch: fetchCount });
    });
    after(() => srv?.stop());

    test("get of a missing key is null in every type; getWithMetadata too", async () => {
      const k = p() + "missing";
      for (const type of ["text", "json", "arrayBuffer", "stream"]) {
        assert.equal(await KV.get(k, type), null);
        assert.equal(await KV.get(k, { type }), null);
        assert.deepEqual(await KV.getWithMetadata(k, type), { value: null, metadata: null, cacheStatus: null });
      }
      assert.equal(await KV.get(k), null);
    });

    test("put of a string reads back as text, json, arrayBuffer and stream", async () => {
      const k = p() + "s";
      await KV.put(k, '{"a":[1,"é"]}');
      assert.equal(await KV.get(k), '{"a":[1,"é"]}');
      assert.equal(await KV.get(k, "text"), '{"a":[1,"é"]}');
      assert.deepEqual(await KV.get(k, "json"), { a: [1, "é"] });
      assert.deepEqual(await KV.get(k, { type: "json" }), { a: [1, "é"] });
      const ab = await KV.get(k, "arrayBuffer");
      assert.ok(ab instanceof ArrayBuffer);
      assert.equal(new TextDecoder().decode(ab), '{"a":[1,"é"]}');
      assert.equal(new TextDecoder().decode(await readAll(await KV.get(k, "stream"))), '{"a":[1,"é"]}');
      await KV.put(k, "{not json");
      await assert.rejects(KV.get(k, "json"), SyntaxError);
    });

    test("put takes ArrayBuffers, views, streams and other primitives as the binding does", async () => {
      const k = p();
      const bytes = new Uint8Array([0, 0xff, 0xfe, 65, 10, 0x80]);
      await KV.put(k + "ab", bytes.buffer.slice(0));
      assert.deepEqual(new Uint8Array(await KV.get(k + "ab", "arrayBuffer")), bytes);
      await KV.put(k + "view", new Uint8Array([9, 1, 2, 3, 9]).subarray(1, 4));
      assert.deepEqual(new Uint8Array(await KV.get(k + "view", "arrayBuffer")), new Uint8Array([1, 2, 3]));
      await KV.put(k + "dv", new DataView(new Uint8Array([65, 66, 67, 68]).buffer, 1, 2));
      assert.equal(await KV.get(k + "dv"), "BC");
      await KV.put(k + "stream", new Response(bytes).body);
      assert.deepEqual(new Uint8Array(await KV.get(k + "stream", "arrayBuffer")), bytes);
      await KV.put(k + "n", /** @type {any} */ (123));
      assert.equal(await KV.get(k + "n"), "123");
      await KV.put(k + "empty", "");
      assert.equal(await KV.get(k + "empty"), "");
      await KV.put(/** @type {any} */ (42), "number key");
      assert.equal(await KV.get("42"), "number key");
      // text decodes bytes that are not UTF-8 with replacement characters
      assert.equal(await KV.get(k + "ab"), new TextDecoder().decode(bytes));
    });

    test("expirationTtl and expiration set an absolute expiry that list reports; a put without one clears it", async () => {
      const k = p();
      await KV.put(k + "ttl", "v", { expirationTtl: 120 });
      const at = now() + 600;
      await KV.put(k + "abs", "v", { expiration: at });
      await KV.put(k + "both", "v", { expirationTtl: 300, expiration: at }); // the TTL wins
      await KV.put(k + "cleared", "v", { expirationTtl: 120 });
      await KV.put(k + "cleared", "v2");
      const { keys } = await KV.list({ prefix: k });
      const exp = Object.fromEntries(keys.map((x) => [x.name.slice(k.length), x.expiration]));
      assert.ok(Math.abs(exp.ttl - (now() + 120)) <= 2, `ttl expiry ${exp.ttl}`);
      assert.equal(exp.abs, at);
      assert.ok(Math.abs(exp.both - (now() + 300)) <= 2, `both expiry ${exp.both}`);
      assert.equal(exp.cleared, undefined);
      assert.ok(!("expiration" in keys.find((x) => x.name === k + "cleared")));
    });

    test("delete removes a key and is idempotent", async () => {
      const k = p() + "d";
      await KV.put(k, "v");
      await KV.delete(k);
      assert.equal(await KV.get(k), null);
      await KV.delete(k);
      await KV.delete(p() + "never");
    });

    test("list: byte order, prefix, small limits with a cursor, list_complete without a cursor", async () => {
      const k = p();
      const names = ["b", "a", "c/d", "é", "a/../b", "z?#%", "A"].map((n) => k + n);
      for (const n of names) await KV.put(n, "v");
      const sorted = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      const all = await KV.list({ prefix: k });
      assert.deepEqual(all.keys.map((x) => x.name), sorted);
      assert.equal(all.list_complete, true);
      assert.equal(all.cursor, undefined);
      assert.equal(all.cacheStatus, null);
      for (const limit of [1, 3, 10]) {
        const seen = [];
        let cursor;
        for (let i = 0; i < 20; i++) {
          const page = await KV.list({ prefix: k, limit, cursor });
          assert.ok(page.keys.length <= limit);
          seen.push(...page.keys.map((x) => x.name));
          if (page.list_complete) break;
          assert.equal(typeof page.cursor, "string");
          cursor = page.cursor;
        }
        assert.deepEqual(seen, sorted, `limit ${limit}`);
      }
      assert.deepEqual((await KV.list({ prefix: k + "c/" })).keys.map((x) => x.name), [k + "c/d"]);
      assert.deepEqual((await KV.list({ prefix: k + "nothing" })).keys, []);
      // limit 0 or less means the default, as in the binding
      assert.equal((await KV.list({ prefix: k, limit: 0 })).keys.length, names.length);
    });

    test("get and getWithMetadata of an array of keys return Maps, as the binding's bulk get does", async () => {
      const k = p();
      await KV.put(k + "1", '{"n":1}');
      await KV.put(k + "2", "two");
      const m = await KV.get([k + "1", k + "2", k + "none"]);
      assert.ok(m instanceof Map);
      assert.deepEqual([...m], [[k + "1", '{"n":1}'], [k + "2", "two"], [k + "none", null]]);
      const j = await KV.get([k + "1", k + "none"], "json");
      assert.deepEqual([...j], [[k + "1", { n: 1 }], [k + "none", null]]);
      const wm = await KV.getWithMetadata([k + "1", k + "none"], "json");
      assert.deepEqual([...wm], [[k + "1", { value: { n: 1 }, metadata: null }], [k + "none", null]]);
      await assert.rejects(KV.get([k + "1", k + "2"], "json"), (e) => /^KV GET_BULK failed: 400 /.test(e.message));
    });

    test("metadata round-trips through put, getWithMetadata in every type, and list; a put without it clears it", async () => {
      const k = p() + "m";
      await KV.put(k, "v", { metadata: { owner: "wordle", n: 1 }, expirationTtl: 600 });
      for (const type of ["text", "json", "arrayBuffer", "stream"]) {
        const got = await KV.getWithMetadata(k, type === "json" ? "text" : type);
        assert.deepEqual(got.metadata, { owner: "wordle", n: 1 }, type);
      }
      const s = await KV.getWithMetadata(k, "stream");
      assert.equal(new TextDecoder().decode(await readAll(s.value)), "v");
      assert.deepEqual(await KV.getWithMetadata(k), { value: "v", metadata: { owner: "wordle", n: 1 }, cacheStatus: null });
      const listed = (await KV.list({ prefix: k })).keys[0];
      assert.deepEqual(listed.metadata, { owner: "wordle", n: 1 });
      await KV.put(k, "v2", { metadata: "just a string" });
      assert.equal((await KV.getWithMetadata(k)).metadata, "just a string");
      await KV.put(k, "v3");
      assert.deepEqual(await KV.getWithMetadata(k), { value: "v3", metadata: null, cacheStatus: null });
      const m = await KV.getWithMetadata([k]);
      assert.deepEqual([...m], [[k, { value: "v3", metadata: null }]]);
    });

    test("the seed's CFKVStore and createStore run unchanged on the binding", async () => {
      const mod = `m${run}`;
      const store = createStore(mod, { KV });
      await store.put("games:1", "a");
      await store.putJSON("games:2", { word: "apple" }, { expirationTtl: 3600 });
      await store.put("other", "b");
      assert.equal(await store.get("games:1"), "a");
      assert.deepEqual(await store.getJSON("games:2"), { word: "apple" });
      assert.equal(await store.get("missing"), null);
      assert.equal(await store.getJSON("missing"), null);
      const listed = await store.list({ prefix: "games:" });
      assert.deepEqual(listed, { keys: ["games:1", "games:2"], cursor: undefined, done: true });
      const page = await store.list({ limit: 1 });
      assert.equal(page.done, false);
      assert.equal(page.keys.length, 1);
      const rest = await store.list({ limit: 1000, cursor: page.cursor });
      assert.deepEqual([...page.keys, ...rest.keys], ["games:1", "games:2", "other"]);
      await store.delete("games:1");
      assert.equal(await store.get("games:1"), null);
      assert.equal(await KV.get(`${mod}:other`), "b");
    });

    test("bad input throws the binding's exceptions before any request", async () => {
      const before = fetchCount.calls;
      const long = "k".repeat(513);
      /** @type {[() => Promise<unknown>, Function, string][]} */
      const cases = [
        [() => KV.get(""), TypeError, "Key name cannot be empty."],
        [() => KV.get("."), TypeError, '"." is not allowed as a key name.'],
        [() => KV.put("..", "v"), TypeError, '".." is not allowed as a key name.'],
        [() => KV.delete(""), TypeError, "Key name cannot be empty."],
        [() => KV.get(long), Error, "KV GET failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512."],
        [() => KV.put("é".repeat(257), "v"), Error, "KV PUT failed: 414 UTF-8 encoded length of 514 exceeds key length limit of 512."],
        [() => KV.delete(long), Error, "KV DELETE failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512."],
        [() => KV.get("k", "bogus"), TypeError, 'Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".'],
        [() => KV.getWithMetadata("k", { type: "bogus" }), TypeError, 'Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".'],
        [() => KV.get("k", { cacheTtl: 10 }), Error, "KV GET failed: 400 Invalid cache_ttl of 10. Cache TTL must be at least 30."],
        [() => KV.put("k", "v", { expirationTtl: 30 }), Error, "KV PUT failed: 400 Invalid expiration_ttl of 30. Expiration TTL must be at least 60."],
        [() => KV.put("k", "v", { expirationTtl: 0 }), Error, "KV PUT failed: 400 Invalid expiration_ttl of 0. Please specify integer greater than 0."],
        [() => KV.put("k", "v", { expirationTtl: /** @type {any} */ ("abc") }), Error, "KV PUT failed: 400 Invalid expiration_ttl of 0. Please specify integer greater than 0."],
        [() => KV.put("k", "v", { expirationTtl: 1e12 }), TypeError, "Value out of range. Must be between -2147483648 and 2147483647 (inclusive)."],
        [() => KV.put("k", "v", { expiration: 1000 }), Error, "KV PUT failed: 400 Invalid expiration of 1000. Please specify integer greater than the current number of seconds since the UNIX epoch."],
        [() => KV.put("k", "v", { expiration: now() + 10 }), Error, `KV PUT failed: 400 Invalid expiration of ${now() + 10}. Expiration times must be at least 60 seconds in the future.`],
        [() => KV.put("k", "v", { metadata: { a: "x".repeat(1100) } }), Error, "KV PUT failed: 413 Metadata length of 1108 exceeds limit of 1024."],
        [() => KV.put("k", "v", { metadata: { a: 1n } }), TypeError, "Do not know how to serialize a BigInt"],
        [() => KV.put("k", /** @type {any} */ ({ a: 1 })), TypeError, "KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values."],
        [() => KV.put("k", /** @type {any} */ (new Blob(["x"]))), TypeError, "KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values."],
        [() => KV.put("k", new Uint8Array(25 * 1024 * 1024 + 1)), Error, "KV PUT failed: 413 Value length of 26214401 exceeds limit of 26214400."],
        [() => KV.put("k", new Response(new Uint8Array(25 * 1024 * 1024 + 7)).body), Error, "KV PUT failed: 413 Value length of 26214407 exceeds limit of 26214400."],
        [() => KV.list({ limit: 1001 }), Error, "KV GET failed: 400 Invalid key_count_limit of 1001. Please specify an integer less than 1000."],
        [() => KV.list({ prefix: long }), Error, "KV GET failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512."],
        [() => KV.list(/** @type {any} */ ("x")), TypeError, "Failed to execute 'list' on 'KvNamespace': parameter 1 is not of type 'ListOptions'."],
        [() => KV.get([]), Error, "KV GET_BULK failed: 400 You must request a minimum of 1 key"],
        [() => KV.get(Array.from({ length: 101 }, (_, i) => `k${i}`)), Error, "KV GET_BULK failed: 400 You can request a maximum of 100 keys"],
        [() => KV.get(["k"], "stream"), Error, 'KV GET_BULK failed: 400 "stream" is not a valid type. Use "json" or "text"'],
        [() => KV.getWithMetadata(["k"], "arrayBuffer"), Error, 'KV GET_BULK failed: 400 "arrayBuffer" is not a valid type. Use "json" or "text"'],
      ];
      const cyclic = {};
      cyclic.self = cyclic;
      for (const [call, type, message] of cases) {
        await assert.rejects(call, (e) => e instanceof type && e.message === message, message);
      }
      await assert.rejects(() => KV.put("k", "v", { metadata: cyclic }), (e) => e instanceof TypeError && /circular/i.test(e.message));
      assert.equal(fetchCount.calls, before, "no request may be sent for bad input");
    });

    test("the server's refusals come back as the binding's errors, with status and code", async () => {
      const bad = kvshadowBinding({ url: srv.url, token: "wrong", accountId: srv.accountId, namespaceId: srv.namespaceId });
      // kvshadow-proxy says its own reason, as Cloudflare's 403 would hide it.
      const [status, why] = server.name.startsWith("kvshadow-proxy")
        ? [401, "kvshadow-proxy refused the token: it is not the proxy's clients' token (KVSHADOW_TOKEN)"]
        : [403, "Authentication error"];
      await assert.rejects(bad.get("k"), (e) => e.message === `KV GET failed: ${status} ${why}` && e.status === status && e.code === 10000);
      await assert.rejects(bad.put("k", "v"), (e) => e.message === `KV PUT failed: ${status} ${why}`);
      await assert.rejects(bad.delete("k"), (e) => e.message === `KV DELETE failed: ${status} ${why}`);
      await assert.rejects(bad.list(), (e) => e.message === `KV GET failed: ${status} ${why}`);
      await assert.rejects(bad.get(["k"]), (e) => e.message === `KV GET_BULK failed: ${status} ${why}`);
      await assert.rejects(bad.getWithMetadata("k", "stream"), (e) => e.message === `KV GET failed: ${status} ${why}`);
      const none = kvshadowBinding({ url: srv.url, token: srv.token, accountId: srv.accountId, namespaceId: "no-such-namespace" });
      if (!server.name.startsWith("bridge")) {
        await assert.rejects(none.get("k"), (e) => e.status === 404 && e.code === 10013 && e.message === "KV GET failed: 404 namespace not found");
      }
      if (!server.name.startsWith("bridge")) {
        // miniflare's binding takes any cursor (see the README's differences)
        await assert.rejects(KV.list({ cursor: "%%%not-a-cursor" }), (e) => e.status === 400 && e.code === 10041);
      }
    });
  });
}

describe("kvshadowBinding outside the happy path", () => {
  test("a proxy that cannot be reached fails each call with a 503 the caller can see", async () => {
    const port = await closedPort();
    const KV = kvshadowBinding({ url: `http://127.0.0.1:${port}/client/v4/`, token: "t", accountId: "acc", namespaceId: "ns" });
    await assert.rejects(KV.get("k"), (e) => e.message === "KV GET failed: 503 kvshadow-proxy unreachable" && e.status === 503 && e.cause !== undefined);
    await assert.rejects(KV.put("k", "v"), (e) => e.message === "KV PUT failed: 503 kvshadow-proxy unreachable");
  });

  test("Workers KV's per-key write rate comes back as a 429 with Retry-After", async () => {
    const srv = await startEmulator(["-write-rate-limit"]);
    try {
      const KV = kvshadowBinding(srv);
      await KV.put("hot", "1");
      await assert.rejects(KV.put("hot", "2"), (e) => e.status === 429 && e.code === 10022 && e.retryAfter === 1 && e.message.startsWith("KV PUT failed: 429 "));
    } finally {
      await srv.stop();
    }
  });

  test("a config it cannot use is refused at once, without the token in the message", () => {
    const ok = { url: "http://127.0.0.1:1/client/v4/", token: "secret-token", accountId: "acc", namespaceId: "ns" };
    for (const bad of [
      { ...ok, url: "not a url" },
      { ...ok, url: "ftp://x/" },
      { ...ok, url: "http://user:pw@x/" },
      { ...ok, accountId: "" },
      { ...ok, namespaceId: "a/b" },
      { ...ok, token: "secret token" },
    ]) {
      assert.throws(() => kvshadowBinding(/** @type {any} */ (bad)), (e) => e instanceof TypeError && !e.message.includes("secret"));
    }
    assert.throws(() => kvshadowBinding(/** @type {any} */ (undefined)), TypeError);
  });
});
