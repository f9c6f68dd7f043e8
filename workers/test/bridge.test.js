// The bridge Worker's answers to paths that kvapi's front refuses before
// routing them: each the same status and code as the kv-emulator's.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { startBridge } from "./support/bridge.js";
import { startEmulator } from "./support/goserver.js";

/** Paths under /client/v4/, each with a bad or odd %-escape. */
const paths = [
  "accounts/acc%zz/storage/kv/namespaces/ns/values/k", // not an escape, in the account
  "accounts/%E0%A4%A/storage/kv/namespaces/ns/keys", // a truncated escape, in the account
  "accounts/%FF/storage/kv/namespaces/ns/values/k", // an escape of no UTF-8: no account of ours
  "accounts/acc/storage/kv/namespaces/ns/values/k%zz", // not an escape, in the key
  "accounts/acc/storage/kv/namespaces/ns/values/k%", // a lone "%", in the key
  "accounts/acc/storage/kv/namespaces/ns/metadata/%4", // a truncated escape, in the key
  "accounts/acc/storage/kv/namespaces/ns/values/%ED%A0%80", // an escape of a lone surrogate: an illegal key
];

describe("the bridge Worker on bad %-escapes", () => {
  /** @type {{name: string, url: string, token: string, stop: () => Promise<unknown>}[]} */
  const servers = [];
  before(async () => {
    const token = randomBytes(16).toString("hex");
    const b = await startBridge({ token, accountId: "acc", namespaceId: "ns" });
    servers.push({ name: "bridge", url: b.url, token, stop: () => b.mf.dispose() });
    const e = await startEmulator();
    servers.push({ name: "kv-emulator", ...e });
  });
  after(async () => {
    for (const s of servers) await s.stop();
  });

  test("answers 400 with the kv-emulator's code, never a 503", async () => {
    for (const p of paths) {
      const got = [];
      for (const s of servers) {
        const res = await fetch(s.url + p, { headers: { Authorization: `Bearer ${s.token}` } });
        const body = await res.json();
        got.push({ status: res.status, code: body.errors[0]?.code, success: body.success });
      }
      const [bridge, emulator] = got;
      assert.equal(bridge.success, false, p);
      assert.ok(bridge.status === 400 || bridge.status === 404, `${p}: bridge answered ${bridge.status}`);
      assert.deepEqual(bridge, emulator, `${p}: the bridge and the kv-emulator differ`);
    }
  });
});

/** Spellings of a key under "__kvshadow:" that the bridge's values route decodes (once) to one. */
const reservedPaths = ["__kvshadow:stage", "__kvshadow%3Astage", "%5F%5Fkvshadow%3Astage", "%5f%5fkvshadow%3astage", "%5F_kvsh%61dow%3aSt%61ge", "__kvshadow:", "__kvshadow:outbox%2F1"];

describe("the bridge Worker on kvshadow's own keys", () => {
  const token = randomBytes(16).toString("hex");
  /** @type {Awaited<ReturnType<typeof startBridge>>} */
  let b;
  /** @type {any} */
  let KV;
  before(async () => {
    b = await startBridge({ token });
    KV = await b.mf.getKVNamespace("KV");
  });
  after(async () => b.mf.dispose());
  const base = () => b.url + "accounts/acc/storage/kv/namespaces/ns/";
  /** @param {string} method @param {string} path @param {BodyInit} [body] @param {Record<string, string>} [headers] */
  const call = (method, path, body, headers = {}) =>
    fetch(base() + path, { method, body, headers: { Authorization: `Bearer ${token}`, ...headers } });

  test("serves kvshadow-proxy's own calls to __kvshadow:stage and refuses every other call on a reserved key, in every spelling, with 400 10042", async () => {
    // kvshadow-proxy writes the key on the way into handover, reads it back.
    assert.equal((await call("PUT", "values/__kvshadow:stage", "handover", { "Content-Type": "application/octet-stream" })).status, 200);
    assert.equal(await (await call("GET", "values/__kvshadow:stage")).text(), "handover");
    await KV.put("__kvshadow:outbox", "kvshadow's");
    await KV.put("wordle:a", "a");

    const form = () => {
      const f = new FormData();
      f.set("value", "handover");
      f.set("metadata", '{"by":"client"}');
      return f;
    };
    /** @type {[string, string, (() => BodyInit) | undefined, Record<string, string> | undefined][]} */
    const calls = [];
    for (const p of reservedPaths) {
      const other = decodeURIComponent(p) !== "__kvshadow:stage"; // the proxy reads and deletes the exact stage key
      for (const v of ["off", "dualwrite", "shadow", ""]) calls.push(["PUT", `values/${p}`, () => v, undefined]);
      calls.push(["PUT", `values/${p}?expiration_ttl=3600`, () => "handover", undefined], ["PUT", `values/${p}`, form, undefined]);
      calls.push(["GET", `metadata/${p}`, undefined, undefined], ["GET", `keys?prefix=${p}`, undefined, undefined]);
      if (other) calls.push(["GET", `values/${p}`, undefined, undefined], ["DELETE", `values/${p}`, undefined, undefined], ["PUT", `values/${p}`, () => "handover", undefined]);
    }
    for (const k of ["__kvshadow:stage", "\\u005f\\u005fkvshadow\\u003astage", "__kvshadow:outbox"]) {
      const json = { "Content-Type": "application/json" };
      calls.push(
        ["PUT", "bulk", () => `[{"key":"wordle:x","value":"1"},{"key":"${k}","value":"handover"}]`, json],
        ["DELETE", "bulk", () => `["wordle:a","${k}"]`, json],
        ["POST", "bulk/delete", () => `["${k}"]`, json],
        ["POST", "bulk/get", () => `{"keys":["wordle:a","${k}"]}`, json],
      );
    }
    for (const [method, path, body, headers] of calls) {
      const res = await call(method, path, body?.(), headers);
      const got = await res.json();
      assert.equal(res.status, 400, `${method} ${path}: ${JSON.stringify(got)}`);
      assert.equal(got.success, false);
      assert.equal(got.errors[0].code, 10042, `${method} ${path}: ${got.errors[0].message}`);
      assert.match(got.errors[0].message, /__kvshadow:/);
    }
    assert.equal(await KV.get("__kvshadow:stage"), "handover", "the stage key changed under the calls");
    assert.equal(await KV.get("__kvshadow:outbox"), "kvshadow's");
    assert.equal(await KV.get("wordle:a"), "a", "a refused bulk delete deleted a key");
    assert.equal(await KV.get("wordle:x"), null, "a refused bulk write wrote a key");

    // A listing shows none of them; kvshadow-proxy deletes the key on the way back to shadow.
    const listed = await (await call("GET", "keys")).json();
    assert.deepEqual(listed.result.map((/** @type {{name: string}} */ k) => k.name), ["wordle:a"]);
    assert.equal(listed.result_info.count, 1);
    assert.equal((await call("DELETE", "values/__kvshadow:stage")).status, 200);
    assert.equal(await KV.get("__kvshadow:stage"), null);
  });
});
