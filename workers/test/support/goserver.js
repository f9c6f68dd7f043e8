// Builds and starts the project's Go servers for the tests: kvshadow-proxy
// --demo (the REST front over the dual-write store, an emulated primary and
// an in-memory shadow) and the kv-emulator (the same front over memory,
// with fault modes).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { packageRoot } from "./bridge.js";

export const repoRoot = join(packageRoot, "..");
const binDir = mkdtempSync(join(tmpdir(), "kvshadow-workers-"));
const built = new Map();

/** @param {string} cmd a folder under cmd/ */
export function goBinary(cmd) {
  if (!built.has(cmd)) {
    const out = join(binDir, cmd);
    execFileSync("go", ["build", "-o", out, `./cmd/${cmd}`], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
    built.set(cmd, out);
  }
  return built.get(cmd);
}


/**
 * Starts a binary that prints the environment a client needs as
 * `export NAME=value ...` lines, and returns that environment once the
 * variables in want are all there.
 * @param {string} bin
 * @param {string[]} args
 * @param {string[]} want
 * @param {Record<string, string>} [env] added to the environment (secrets go there, never in flags)
 */
export async function startPrinting(bin, args, want, env = {}) {
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const vars = {};
  await new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`${bin} printed no client environment within 60 s`)), 60_000);
    child.on("exit", (code) => reject(new Error(`${bin} exited with ${code} before it listened`)));
    child.stdout.on("data", (d) => {
      buf += d;
      for (const m of buf.matchAll(/(CLOUDFLARE_[A-Z_]+|KVSHADOW_[A-Z_]+)=(\S+)/g)) vars[m[1]] = m[2];
      if (want.every((k) => vars[k])) {
        clearTimeout(timer);
        resolve(undefined);
      }
    });
  });
  child.removeAllListeners("exit");
  return {
    vars,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(undefined);
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

/**
 * The kv-emulator on a free loopback port, with a token.
 * @param {string[]} [flags] more flags (faults)
 */
export async function startEmulator(flags = []) {
  const token = randomBytes(16).toString("hex");
  const s = await startPrinting(goBinary("kv-emulator"), ["-addr", "127.0.0.1:0", "-account", "acc", "-namespace", "ns", ...flags], ["CLOUDFLARE_BASE_URL"], {
    KV_EMULATOR_TOKEN: token,
  });
  return { url: s.vars.CLOUDFLARE_BASE_URL, token, accountId: "acc", namespaceId: "ns", stop: s.stop };
}

/** kvshadow-proxy --demo on free loopback ports. */
export async function startProxy() {
  const s = await startPrinting(goBinary("kvshadow-proxy"), ["--demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"], [
    "CLOUDFLARE_BASE_URL",
    "CLOUDFLARE_ACCOUNT_ID",
    "CLOUDFLARE_KV_NAMESPACE_ID",
    "CLOUDFLARE_API_TOKEN",
  ]);
  return { url: s.vars.CLOUDFLARE_BASE_URL, token: s.vars.CLOUDFLARE_API_TOKEN, accountId: s.vars.CLOUDFLARE_ACCOUNT_ID, namespaceId: s.vars.CLOUDFLARE_KV_NAMESPACE_ID, stop: s.stop };
}
