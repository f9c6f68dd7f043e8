// The proxy mode's line, as workers/README.md and docs/bot-guide.md give it:
// the same variables in both, so that a bot team sets one set of [vars].
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "./support/bridge.js";

/** The env variables of each kvshadowBinding({ url: env... }) call in file. */
function bindingVars(file) {
  const text = readFileSync(file, "utf8").replace(/\s+/g, " ");
  return (text.match(/kvshadowBinding\(\{ url: env\.[^)]*\)/g) ?? []).map((call) => [...call.matchAll(/env\.([A-Z_]+)/g)].map((m) => m[1]).join(" "));
}

test("the proxy mode's line names the same variables in the README and the guide", () => {
  const readme = bindingVars(join(packageRoot, "README.md"));
  const guide = bindingVars(join(packageRoot, "..", "docs", "bot-guide.md"));
  assert.ok(readme.length > 0 && guide.length > 0, "a document gives no proxy-mode line");
  assert.deepEqual([...new Set([...readme, ...guide])], ["KVSHADOW_URL KVSHADOW_TOKEN KVSHADOW_ACCOUNT KVSHADOW_NAMESPACE"]);
});
