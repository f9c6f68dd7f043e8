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
 * @param {{token: string, accountId?: string, namespaceId?: string, persist?: string}} o
 */
export async function startBridge(o) {
  const cfg = wranglerConfig();
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    modules: true,
    modulesRoot: packageRoot,
    modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
    scriptPath: join(packageRoot, "bridge", cfg.main),
    compatibilityDate: cfg.compatibilityDate,
    kvNamespaces: { [cfg.binding]: "bridge-primary" },
    kvPersist: o.persist ?? false,
    bindings: { BRIDGE_TOKEN: o.token, ACCOUNT_ID: o.accountId ?? "", NAMESPACE_ID: o.namespaceId ?? "" },
  });
  const url = await mf.ready;
  return { mf, url: new URL("/client/v4/", url).toString(), kv: () => mf.getKVNamespace(cfg.binding) };
}
