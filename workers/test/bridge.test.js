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
