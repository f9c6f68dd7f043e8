// A recording stand-in for the proxy's tee endpoints (the Go ingest
// package's wire format), for the tee's unit tests: it keeps each batch,
// answers the stage it is told, and forwards the REST API to a real server
// (the kv-emulator) so that proxy mode is the real REST path.
import { createServer } from "node:http";

/**
 * @param {{token: string, rest?: string}} o rest: the REST API root to forward /client/v4/ to
 */
export async function startRecorder(o) {
  const state = { batches: [], stageReads: 0, stage: { stage: "dualwrite", authoritative: "primary" }, stageStatus: 200, status: 200, statuses: [], requests: 0 };
  const server = createServer(async (req, res) => {
    state.requests++;
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (req.url.startsWith("/client/v4/") && o.rest) {
      const resp = await fetch(o.rest + req.url.slice("/client/v4/".length), {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length")),
        body: req.method === "GET" || req.method === "HEAD" ? undefined : body,
      });
      res.writeHead(resp.status, Object.fromEntries(resp.headers));
      res.end(Buffer.from(await resp.arrayBuffer()));
      return;
    }
    if (req.headers.authorization !== `Bearer ${o.token}`) {
      res.writeHead(401).end();
      return;
    }
    if (req.url.startsWith("/kvshadow/v1/stage")) {
      state.stageReads++;
      if (state.stageStatus !== 200) {
        res.writeHead(state.stageStatus).end("{}");
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(state.stage));
      return;
    }
    if (req.url === "/kvshadow/v1/ingest" && req.method === "POST") {
      // statuses: the answers to give the next batches, in order; then status.
      const status = state.statuses.length > 0 ? state.statuses.shift() : state.status;
      if (status !== 200) {
        res.writeHead(status).end("{}");
        return;
      }
      const batch = JSON.parse(body.toString());
      state.batches.push({ batch, raw: body.toString() });
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ copies: batch.copies.length, reads: batch.reads.length }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = /** @type {any} */ (server.address());
  return { url: `http://127.0.0.1:${port}`, state, stop: () => new Promise((r) => server.close(r)) };
}

/** An invocation's ctx that keeps what it is given to wait for. */
export function invocation() {
  const pending = [];
  return {
    waitUntil(p) {
      pending.push(Promise.resolve(p));
    },
    /** Waits for everything waitUntil was given, including what those added. */
    async done() {
      for (let i = 0; i < pending.length; i++) await pending[i];
    },
    get count() {
      return pending.length;
    },
  };
}
