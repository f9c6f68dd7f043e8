// tee-check's test bot (tests/teecheck, TestTeeCheckNamesTheHandlerThatWroteAroundTheTee):
// every handler writes its binding through the tee but one, POST /reset,
// which writes env.KV itself.
import { kvshadowTee } from "../../src/index.js";

/** @param {any} env @param {ExecutionContext} ctx */
const teed = (env, ctx) => kvshadowTee(env.KV, { url: env.KVSHADOW_URL, token: env.KVSHADOW_TOKEN }, ctx);

export default {
  /** @param {Request} request @param {any} env @param {ExecutionContext} ctx */
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === "/reset") {
      await env.KV.put("score:all", "0"); // around the tee
      return new Response("reset\n");
    }
    const kv = teed(env, ctx);
    if (request.method === "DELETE") await kv.delete(`score:${pathname.slice(1)}`);
    else await kv.put(`score:${pathname.slice(1)}`, await request.text());
    return new Response("ok\n");
  },

  /** @param {ScheduledController} event @param {any} env @param {ExecutionContext} ctx */
  async scheduled(event, env, ctx) {
    await teed(env, ctx).put("round", String(event.scheduledTime));
  },
};
