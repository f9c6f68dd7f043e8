// Starts the bridge Worker in workerd through miniflare, configured from
// bridge/wrangler.toml, listening on loopback.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

export const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The few fields of bridge/wrangler.toml the bridge needs. */
export function wranglerConfig() {
  const toml = readFileSync(join(packageRoot, "bridge", "wrangler.toml"), "utf8");
  const field = (name) => new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m").exec(toml)?.[1];
  const binding = /binding\s*=\s*"([^"]+)"/.exec(toml)?.[1];
  return { main: field("main"), compatibilityDate: field("compatibility_date"), binding };
}

/**
 * The bridge as one worker of a Miniflare: its options.
 * @param {{token: string, accountId?: string, namespaceId?: string, kvNamespace?: string}} o
 */
export function bridgeWorker(o) {
  const cfg = wranglerConfig();
  return {
    name: "bridge",
    modules: true,
    modulesRoot: packageRoot,
    modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
    scriptPath: join(packageRoot, "bridge", cfg.main),
    compatibilityDate: cfg.compatibilityDate,
    kvNamespaces: { [cfg.binding]: o.kvNamespace ?? "bridge-primary" },
    bindings: { BRIDGE_TOKEN: o.token, ACCOUNT_ID: o.accountId ?? "", NAMESPACE_ID: o.namespaceId ?? "" },
  };
}

/**
 * @param {{token: string, accountId?: string, namespaceId?: string}} o
 */
export async function startBridge(o) {
  const mf = new Miniflare({ host: "127.0.0.1", port: 0, workers: [bridgeWorker(o)] });
  const url = await mf.ready;
  return { mf, url: new URL("/client/v4/", url).toString() };
}
