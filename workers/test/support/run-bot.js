// For the Go end-to-end test: runs the test bot Worker in tee mode and the
// bridge Worker over the same miniflare KV namespace; prints {"bridge"}, and
// on the line "go" from its standard input drives bot-like traffic, then
// prints {"writes", "invocations"}; on "read <key>" the bot reads that key
// once through the tee, which reports the read, and prints {"found"}. It
// keeps the bridge up until its standard input closes. Settings come from
// the environment: KVSHADOW_URL (the ingest origin), KVSHADOW_TOKEN,
// KVSHADOW_BRIDGE_TOKEN, KVSHADOW_UPDATES.
import { drive, startBot, updates } from "./bot.js";
import { stopWhenInputEnds } from "./runner.js";

const env = process.env;
const n = Number(env.KVSHADOW_UPDATES ?? 120);
const mode = env.KVSHADOW_MODE ?? "tee";
const mf = await startBot(
  {
    KVSHADOW_MODE: mode,
    KVSHADOW_URL: env.KVSHADOW_URL,
    KVSHADOW_TOKEN: env.KVSHADOW_TOKEN,
    KVSHADOW_ACCOUNT: env.KVSHADOW_ACCOUNT ?? "",
    KVSHADOW_NAMESPACE: env.KVSHADOW_NAMESPACE ?? "ns",
    KVSHADOW_SAMPLE: "0.2",
  },
  mode === "tee" ? { bridgeToken: env.KVSHADOW_BRIDGE_TOKEN } : {},
);
stopWhenInputEnds(mf);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", async (d) => {
  input += d;
  let nl;
  while ((nl = input.indexOf("\n")) >= 0) {
    const line = input.slice(0, nl);
    input = input.slice(nl + 1);
    if (line === "go") {
      const answers = await drive(mf, updates(n, 8), 4);
      const writes = answers.reduce((s, a) => s + a.writes, 0);
      process.stdout.write(JSON.stringify({ writes, invocations: n }) + "\n");
    } else if (line.startsWith("read ")) {
      const [answer] = await drive(mf, [{ user: "u0", read: line.slice(5) }], 1);
      process.stdout.write(JSON.stringify(answer) + "\n");
    }
  }
});
process.stdout.write(JSON.stringify({ bridge: mf.bridgeURL ?? "" }) + "\n");
