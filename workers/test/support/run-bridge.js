// Runs the bridge Worker in miniflare for a test in another language:
// prints one JSON line {"url", "account", "namespace"} once it listens, and
// stops when its standard input closes or on SIGTERM. The token comes from
// KVSHADOW_BRIDGE_TOKEN, never from an argument (arguments show in ps).
import { startBridge } from "./bridge.js";
import { stopWhenInputEnds } from "./runner.js";

const token = process.env.KVSHADOW_BRIDGE_TOKEN;
if (!token) {
  console.error("run-bridge: set KVSHADOW_BRIDGE_TOKEN");
  process.exit(2);
}
const bridge = await startBridge({ token });
stopWhenInputEnds(bridge.mf);
process.stdin.resume();
process.stdout.write(JSON.stringify({ url: bridge.url, account: "bridge-account", namespace: "bridge-namespace" }) + "\n");
