// The bot's MongoDB client, in the one form that works in workerd: a client
// per invocation. (The bot's own mongo-client.js keeps one client for the
// isolate; in workerd a socket belongs to the invocation that opened it, so
// that client answers its first invocation and hangs on the next.) The
// client is keyed by the env object the invocation built, opened on first
// use, and closed by closeMongo in ctx.waitUntil at the invocation's end.
import { MongoClient } from "mongodb";

/** @type {WeakMap<object, {client: MongoClient, connecting: Promise<any>}>} */
const clients = new WeakMap();

/** Connections opened, for the benchmark's subrequest count. */
export const opened = { count: 0 };

/**
 * @param {{MONGODB_URI: string}} env the invocation's env
 * @returns {Promise<import("mongodb").Db>}
 */
export async function getDb(env) {
  let c = clients.get(env);
  if (!c) {
    const client = new MongoClient(env.MONGODB_URI, {
      maxPoolSize: 1,
      minPoolSize: 0,
      serverSelectionTimeoutMS: Number(env.MONGODB_SELECTION_TIMEOUT_MS ?? 5000),
      connectTimeoutMS: 10000,
    });
    opened.count++;
    c = { client, connecting: client.connect() };
    clients.set(env, c);
  }
  await c.connecting;
  return c.client.db("miti99bot");
}

/** @param {object} env */
export async function closeMongo(env) {
  const c = clients.get(env);
  if (!c) return;
  clients.delete(env);
  await c.client.close().catch(() => {});
}
