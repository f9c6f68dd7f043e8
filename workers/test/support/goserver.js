// Builds and starts the project's Go servers for the tests: the REST
// front the binding talks to (kvshadow-proxy --demo once it exists in the
// repository, else the kv-emulator, which serves the same API).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
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

/** Whether kvshadow-proxy is in the repository. */
export const haveProxy = existsSync(join(repoRoot, "cmd", "kvshadow-proxy"));

/**
 * Starts a binary that prints the environment a client needs as
 * `export NAME=value ...` lines, and returns that environment.
 * @param {string} bin
 * @param {string[]} args
 * @param {Record<string,string>} [env]
 */
export async function startPrinting(bin, args, env = {}) {
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const vars = {};
  await new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`${bin} printed no client environment within 60 s`)), 60_000);
    child.on("exit", (code) => reject(new Error(`${bin} exited with ${code} before it listened`)));
    child.stdout.on("data", (d) => {
      buf += d;
      for (const m of buf.matchAll(/(CLOUDFLARE_[A-Z_]+|KVSHADOW_[A-Z_]+)=(\S+)/g)) vars[m[1]] = m[2];
      if (vars.CLOUDFLARE_BASE_URL && vars.CLOUDFLARE_KV_NAMESPACE_ID) {
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
  const s = await startPrinting(goBinary("kv-emulator"), ["-addr", "127.0.0.1:0", "-account", "acc", "-namespace", "ns", "-token", token, ...flags]);
  return { url: s.vars.CLOUDFLARE_BASE_URL, token, accountId: "acc", namespaceId: "ns", stop: s.stop };
}
