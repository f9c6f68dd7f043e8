// The servers the binding's tests run against, each started by the test.
import { randomBytes } from "node:crypto";
import { startBridge } from "./bridge.js";
import { startEmulator, startProxy } from "./goserver.js";

/**
 * @typedef {Object} Server
 * @property {string} url
 * @property {string} token
 * @property {string} accountId
 * @property {string} namespaceId
 * @property {() => Promise<unknown>} stop
 */

/**
 * Each server the binding's tests run against, and whether it keeps
 * metadata: the dual-write store behind kvshadow-proxy keeps none yet, and
 * refuses a write that carries some (400, 10047) rather than drop it.
 * @type {{name: string, keepsMetadata: boolean, start: () => Promise<Server>}[]}
 */
export const servers = [
  { name: "kvshadow-proxy --demo", keepsMetadata: false, start: () => startProxy() },
  { name: "kv-emulator", keepsMetadata: true, start: () => startEmulator() },
  {
    name: "bridge Worker (miniflare KV)",
    keepsMetadata: true,
   
    start: async () => {
      const token = randomBytes(16).toString("hex");
      const b = await startBridge({ token });
      return { url: b.url, token, accountId: "acc", namespaceId: "ns", stop: () => b.mf.dispose() };
    },
  },
];
