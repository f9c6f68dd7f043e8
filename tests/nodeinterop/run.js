// Runs the operations the Go test sends on standard input, through the
// bot's MongoKVStore, and prints one result per operation as JSON:
//
//   {"uri": "...", "db": "...", "ops": [{"op": "get", "collection": "wordle", "key": "wordle:x"}, ...]}
//
// get answers {type, value?, length, sha256}: the type the bot's code sees
// ("string", "null", "undefined" or "object"), the value when it is a short
// string, and the length and SHA-256 of a string's UTF-8 bytes.
import { createHash } from "node:crypto";
import { MongoClient } from "mongodb";
import { MongoKVStore } from "./mongo-kv-store.js";

const input = JSON.parse(await new Promise((resolve, reject) => {
  let text = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
  process.stdin.on("error", reject);
}));

const client = new MongoClient(input.uri, { serverSelectionTimeoutMS: 5000 });
const out = [];
try {
  const db = client.db(input.db);
  const stores = new Map();
  const store = (name) => {
    if (!stores.has(name)) stores.set(name, new MongoKVStore(db, name));
    return stores.get(name);
  };
  for (const op of input.ops) {
    const s = store(op.collection);
    switch (op.op) {
      case "get": {
        const v = await s.get(op.key);
        const r = { type: v === null ? "null" : typeof v };
        if (typeof v === "string") {
          const bytes = Buffer.from(v, "utf8");
          r.length = bytes.length;
          r.sha256 = createHash("sha256").update(bytes).digest("hex");
          if (bytes.length <= 4096) r.value = v;
        }
        out.push(r);
        break;
      }
      case "getJSON":
        out.push({ json: await s.getJSON(op.key) });
        break;
      case "put":
        await s.put(op.key, op.value, op.ttl ? { expirationTtl: op.ttl } : {});
        out.push({ ok: true });
        break;
      case "putJSON":
        await s.putJSON(op.key, op.json);
        out.push({ ok: true });
        break;
      case "delete":
        await s.delete(op.key);
        out.push({ ok: true });
        break;
      case "list":
        out.push(await s.list({ prefix: op.prefix, limit: op.limit, cursor: op.cursor }));
        break;
      case "listAll": {
        // Pages as the bot's callers do: until done, never until empty.
        const keys = [];
        let cursor;
        let pages = 0;
        for (;;) {
          const page = await s.list({ prefix: op.prefix, limit: op.limit, cursor });
          keys.push(...page.keys);
          pages++;
          if (page.done) break;
          cursor = page.cursor;
        }
        out.push({ keys, pages });
        break;
      }
      default:
        throw new Error(`unknown op ${op.op}`);
    }
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out));
