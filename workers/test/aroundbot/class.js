// tee-check's test bot as a WorkerEntrypoint class (TestTeeCheckRunsAClassWorkerUnwatched):
// tee-check cannot watch its handlers, and finds its write around the tee
// as a key that differs.
import { WorkerEntrypoint } from "cloudflare:workers";

export default class extends WorkerEntrypoint {
  async fetch() {
    await /** @type {any} */ (this.env).KV.put("score:class", "1"); // around the tee
    return new Response("ok\n");
  }
}
