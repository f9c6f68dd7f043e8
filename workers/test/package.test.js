// The package as a bot team adds it: packed with npm pack (as `make
// workers-pack` does), installed from the tarball into a fresh Worker
// project outside the repository, bundled by wrangler (the version in
// package.json) and run in workerd through miniflare; and the bridge built
// from its packed folder alone.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import { packageRoot } from "./support/bridge.js";
import { startRecorder } from "./support/ingest-recorder.js";

const run = promisify(execFile);
const wrangler = join(packageRoot, "node_modules", ".bin", "wrangler");
// wrangler offline: no metrics, no update check, no browser.
const quiet = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "error", CI: "1", NO_UPDATE_NOTIFIER: "1" };

/**
 * Bundles a Worker project with wrangler as `wrangler deploy` would, without
 * deploying, and returns the bundle (wrangler places it by the entry's path).
 */
async function build(dir, config) {
  const out = join(dir, "dist");
  await run(wrangler, ["deploy", "--dry-run", "--outdir", out, "-c", config], { cwd: dir, env: quiet, timeout: 120_000 });
  const found = readdirSync(out, { recursive: true }).filter((f) => String(f).endsWith(".js"));
  assert.equal(found.length, 1, `wrangler wrote ${found.join(", ")}`);
  return join(out, String(found[0]));
}

describe("the packed package", () => {
  let work, tarball, unpacked;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), "kvshadow-pack-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: packageRoot });
    const [info] = JSON.parse(stdout);
    tarball = join(work, info.filename);
    unpacked = join(work, "unpacked");
    mkdirSync(unpacked);
    await run("tar", ["-xzf", tarball, "-C", unpacked]);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  test("holds what a Worker and the bridge need, and no tests", () => {
    const pkg = join(unpacked, "package");
    for (const f of ["package.json", "README.md", "src/index.js", "src/tee.js", "bridge/worker.js", "bridge/wrangler.toml"]) {
      assert.ok(existsSync(join(pkg, f)), `the tarball lacks ${f}`);
    }
    assert.ok(!existsSync(join(pkg, "test")), "the tarball carries the tests");
  });

  test("installs into a Worker project outside the repository and runs in workerd", async () => {
    const bot = join(work, "bot");
    mkdirSync(join(bot, "src"), { recursive: true });
    writeFileSync(join(bot, "package.json"), JSON.stringify({ name: "bot", private: true, type: "module" }));
    await run("npm", ["install", "--no-audit", "--no-fund", "--offline", tarball], { cwd: bot });
    writeFileSync(
      join(bot, "src", "index.js"),
      `import { kvshadowTee } from "kvshadow-workers";
export default {
  async fetch(request, env, ctx) {
    const KV = kvshadowTee(env.KV, { url: env.KVSHADOW_URL, token: env.KVSHADOW_TOKEN, namespaceId: "bot-kv" }, ctx);
    await KV.put("wordle:games:1", "{\\"g\\":1}");
    return new Response(await KV.get("wordle:games:1"));
  },
};
`,
    );
    writeFileSync(join(bot, "wrangler.toml"), `name = "bot"\nmain = "src/index.js"\ncompatibility_date = "2025-01-01"\nkv_namespaces = [{ binding = "KV", id = "bot-kv" }]\n`);
    const script = await build(bot, "wrangler.toml");
    const proxy = await startRecorder({ token: "pack-token" });
    const mf = new Miniflare({
      modules: true,
      modulesRoot: dirname(script),
      scriptPath: script,
      compatibilityDate: "2025-01-01",
      kvNamespaces: ["KV"],
      bindings: { KVSHADOW_URL: proxy.url, KVSHADOW_TOKEN: "pack-token" },
    });
    try {
      const res = await mf.dispatchFetch("http://bot.example/");
      assert.equal(await res.text(), '{"g":1}');
      assert.equal(await (await mf.getKVNamespace("KV")).get("wordle:games:1"), '{"g":1}', "the write is not in the binding");
    } finally {
      await mf.dispose();
      await proxy.stop();
    }
  });

  test("the bridge builds from its packed folder alone, and serves", async () => {
    const alone = join(work, "bridge-alone");
    cpSync(join(unpacked, "package", "bridge"), join(alone, "bridge"), { recursive: true });
    const script = await build(alone, "bridge/wrangler.toml");
    assert.ok(!readFileSync(script, "utf8").includes("../src/"), "the bundle still points outside the bridge's folder");
    const mf = new Miniflare({ modules: true, modulesRoot: dirname(script), scriptPath: script, compatibilityDate: "2025-01-01", kvNamespaces: ["KV"], bindings: { BRIDGE_TOKEN: "bridge-token", ACCOUNT_ID: "", NAMESPACE_ID: "" } });
    try {
      const base = "http://bridge.example/client/v4/accounts/a/storage/kv/namespaces/n/values/";
      const auth = { Authorization: "Bearer bridge-token" };
      const put = await mf.dispatchFetch(base + "k", { method: "PUT", headers: auth, body: "v" });
      assert.equal(put.status, 200, await put.text());
      const got = await mf.dispatchFetch(base + "k", { headers: auth });
      assert.equal(await got.text(), "v");
    } finally {
      await mf.dispose();
    }
  });
});
