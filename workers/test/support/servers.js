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
 * Each server the binding's tests run against.
 * @type {{name: string, start: () => Promise<Server>}[]}
 */
export const servers = [
  { name: "kvshadow-proxy --demo", start: () => startProxy() },
  { name: "kv-emulator", start: () => startEmulator() },
  {
    name: "bridge Worker (miniflare KV)",
   
   
    start: async () => {
      const token = randomBytes(16).toString("hex");
      const b = await startBridge({ token });
      return { url: b.url, token, accountId: "acc", namespaceId: "ns", stop: () => b.mf.dispose() };
    },
  },
];
