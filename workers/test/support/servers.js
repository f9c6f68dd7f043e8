// The servers the binding's tests run against, each started by the test.
import { randomBytes } from "node:crypto";
import { startBridge } from "./bridge.js";
import { startEmulator } from "./goserver.js";

/**
 * @typedef {Object} Server
 * @property {string} url
 * @property {string} token
 * @property {string} accountId
 * @property {string} namespaceId
 * @property {() => Promise<unknown>} stop
 */

/**
 * Each server and what it keeps. The project's REST front (kvapi) keeps no
 * metadata yet: it checks it and drops it (see kvapi's package doc), so the
 * metadata round trips run against the bridge, whose binding keeps it.
 * @type {{name: string, keepsMetadata: boolean, start: () => Promise<Server>}[]}
 */
export const servers = [
  { name: "kv-emulator (kvapi over memory)", keepsMetadata: false, start: () => startEmulator() },
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
