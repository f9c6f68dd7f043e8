/**
 * kvshadowTee: the bot's own binding stays its primary, with no added
 * latency; a copy of each write, and digests of a sample of reads, go to
 * kvshadow-proxy after the response, through ctx.waitUntil. When the stage
 * makes MongoDB authoritative, reads and writes go through the proxy.
 * @module
 */
import { checkKey, putPlan, valueType } from "./limits.js";
import { ProxyNamespace } from "./binding.js";
import { RestClient, checkConfig } from "./rest.js";
import { asType, toBase64, valueBytes } from "./values.js";

/** Where the proxy serves the tee's endpoints (the ingest package). */
export const INGEST_PATH = "/kvshadow/v1/ingest";
export const STAGE_PATH = "/kvshadow/v1/stage";
/** Where the proxy serves the Workers KV REST API. */
export const REST_PATH = "/client/v4/";

/**
 * @typedef {Object} TeeConfig
 * @property {string} url the proxy's origin, e.g. "https://kvshadow.example.com"
 * @property {string} token the proxy's ingest token (a Worker secret)
 * @property {string} [namespaceId] the namespace the proxy serves for this binding; the proxy's default when absent
 * @property {string} [accountId] for proxy mode; the proxy's answer when absent
 * @property {number} [sampleRate] share of reads reported as digests, 0..1; 0.05 by default
 * @property {number} [idleMs] a batch is sent once no write came for this long; 250 ms by default
 * @property {number} [maxCopies] a batch is sent at once when it holds this many items; 100 by default
 * @property {number} [stageTtlMs] how long the stage read from the proxy is trusted; 30 s by default
 * @property {number} [stageTimeoutMs] how long a stage read may take before the last stage known (the binding, at first) is used; 1 s by default
 * @property {typeof fetch} [fetch]
 * @property {() => number} [random] for sampling; Math.random by default
 * @property {() => number} [now] milliseconds since the epoch, for the stage's age; Date.now by default
 */

/**
 * @typedef {Object} TeeStats
 * @property {number} batches batches sent and accepted
 * @property {number} copies copies accepted by the proxy
 * @property {number} reads read digests sent
 * @property {number} failed items the proxy did not take (down, refused); settling or a reconciliation repairs their keys
 * @property {number} requests requests the tee made to the proxy (stage reads included)
 */

/**
 * The stage each isolate knows, per proxy and namespace: one read per
 * stageTtlMs at most, shared by every invocation of the isolate.
 * @type {Map<string, {at: number, proxy: boolean, account?: string, namespace?: string, pending?: Promise<void>}>}
 */
const stages = new Map();

/** Forgets the stages this isolate read (tests; a redeploy does it too). */
export function forgetStages() {
  stages.clear();
}

/**
 * Returns a KVNamespace-compatible object over `kv` for one invocation.
 * @param {KVNamespace} kv the bot's binding, env.KV
 * @param {TeeConfig} cfg
 * @param {{waitUntil(p: Promise<unknown>): void}} ctx the invocation's context
 */
export function kvshadowTee(kv, cfg, ctx) {
  return new TeeNamespace(kv, cfg, ctx);
}

export class TeeNamespace {
  /**
   * @param {KVNamespace} kv
   * @param {TeeConfig} cfg
   * @param {{waitUntil(p: Promise<unknown>): void}} ctx
   */
  constructor(kv, cfg, ctx) {
    if (!kv || typeof kv.get !== "function") throw new TypeError("kvshadowTee: the first argument must be the KV binding");
    if (!ctx || typeof ctx.waitUntil !== "function") throw new TypeError("kvshadowTee: the third argument must be the invocation's ctx");
    checkConfig({ ...cfg, url: cfg?.url, accountId: cfg?.accountId ?? "x", namespaceId: cfg?.namespaceId ?? "x" }, "kvshadowTee");
    if (!cfg.token) throw new TypeError("kvshadowTee: token (the proxy's client token) is required");
    const origin = new URL(cfg.url);
    this.kv = kv;
    this.ctx = ctx;
    this.cfg = {
      sampleRate: cfg.sampleRate ?? 0.05,
      idleMs: cfg.idleMs ?? 250,
      maxCopies: cfg.maxCopies ?? 100,
      stageTtlMs: cfg.stageTtlMs ?? 30_000,
      stageTimeoutMs: cfg.stageTimeoutMs ?? 1000,
      random: cfg.random ?? Math.random,
      now: cfg.now ?? Date.now,
    };
    this.origin = origin.origin;
    this.token = cfg.token;
    this.namespaceId = cfg.namespaceId;
    this.accountId = cfg.accountId;
    this.fetch = cfg.fetch ?? ((/** @type {any} */ i, /** @type {any} */ o) => fetch(i, o));
    this.stageKey = `${this.origin} ${this.namespaceId ?? ""}`;
    /** @type {object[]} */
    this.copies = [];
    /** @type {{key: string, bytes: Uint8Array|null, at: number}[]} */
    this.reads = [];
    /** @type {TeeStats} */
    this.stats = { batches: 0, copies: 0, reads: 0, failed: 0, requests: 0 };
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    this.timer = undefined;
    /** @type {(() => void)|undefined} */
    this.wake = undefined;
    /** @type {ProxyNamespace|undefined} */
    this.proxy = undefined;
  }

  /**
   * The namespace to use for this call: the proxy when the stage says
   * MongoDB is authoritative, else undefined (the binding). A stage older
   * than stageTtlMs is read again after the response; only an isolate's
   * first call waits for it.
   * @returns {Promise<ProxyNamespace|undefined>}
   */
  async route() {
    let s = stages.get(this.stageKey);
    const now = this.cfg.now();
    if (!s) {
      s = { at: 0, proxy: false };
      stages.set(this.stageKey, s);
      await this.readStage(s);
    } else if (now - s.at > this.cfg.stageTtlMs && !s.pending) {
      this.ctx.waitUntil(this.readStage(s));
    } else if (s.pending && s.at === 0) {
      await s.pending;
    }
    if (!s.proxy) return undefined;
    if (!this.proxy) {
      this.proxy = new ProxyNamespace(
        new RestClient({
          url: this.origin + REST_PATH,
          token: this.token,
          accountId: this.accountId ?? s.account ?? "",
          namespaceId: this.namespaceId ?? s.namespace ?? "",
          fetch: this.fetch,
        }),
      );
    }
    return this.proxy;
  }

  /**
   * Reads the stage; when the proxy cannot say, the last stage known
   * stays (the binding at first).
   * @param {{at: number, proxy: boolean, account?: string, namespace?: string, pending?: Promise<void>}} s
   */
  readStage(s) {
    s.pending = (async () => {
      try {
        const q = this.namespaceId ? `?namespace=${encodeURIComponent(this.namespaceId)}` : "";
        this.stats.requests++;
        const resp = await this.fetch(this.origin + STAGE_PATH + q, {
          headers: { Authorization: `Bearer ${this.token}` },
          signal: AbortSignal.timeout(this.cfg.stageTimeoutMs),
        });
        if (!resp.ok) return void (await resp.body?.cancel());
        const body = await resp.json();
        s.proxy = body.authoritative === "shadow";
        s.account = body.account || undefined;
        s.namespace = body.namespace || undefined;
      } catch {
        // unreachable or too slow: keep what is known until the next read
      } finally {
        s.at = this.cfg.now();
        s.pending = undefined;
      }
    })();
    return s.pending;
  }

  /** @param {unknown} key @param {unknown} [options] */
  get(key, options) {
    return this.read("get", key, options);
  }

  /** @param {unknown} key @param {unknown} [options] */
  getWithMetadata(key, options) {
    return this.read("getWithMetadata", key, options);
  }

  /**
   * A read through the proxy, or the binding; a sampled one reads the
   * value's bytes, notes their digest and returns them in the type asked.
   * @param {"get"|"getWithMetadata"} method
   * @param {unknown} key
   * @param {unknown} options
   */
  async read(method, key, options) {
    const proxy = await this.route();
    if (proxy) return proxy[method](key, options);
    const kv = /** @type {any} */ (this.kv);
    if (Array.isArray(key) || !this.sampled()) return kv[method](key, options);
    const type = valueType(options);
    const got = await kv[method](key, { ...(options !== null && typeof options === "object" ? options : {}), type: "arrayBuffer" });
    const raw = method === "get" ? got : got.value;
    const bytes = raw === null ? null : new Uint8Array(raw);
    this.noteRead(String(key), bytes);
    const value = bytes === null ? null : asType(bytes, type);
    return method === "get" ? value : { ...got, value };
  }

  /**
   * Writes through the binding, then queues the copy. A stream is read
   * first, as the copy needs its bytes.
   * @param {unknown} key
   * @param {unknown} value
   * @param {{expirationTtl?: number, expiration?: number, metadata?: unknown}} [options]
   */
  async put(key, value, options) {
    const proxy = await this.route();
    if (proxy) return proxy.put(key, value, options);
    // The copy's bytes, taken before the binding may consume a stream;
    // the checks are the binding's own, with its messages.
    const bytes = await valueBytes(value);
    await this.kv.put(/** @type {string} */ (key), /** @type {any} */ (value instanceof ReadableStream ? bytes : value), /** @type {any} */ (options));
    const acked = Date.now();
    const name = checkKey(key, "PUT");
    const plan = putPlan(options, Math.floor(acked / 1000) - 1);
    /** @type {any} */
    const copy = { key: name, value: toBase64(bytes), acked_at: acked };
    const exp = plan.expirationTtl ? Math.floor(acked / 1000) + plan.expirationTtl : plan.expiration;
    if (exp) copy.expiration = exp;
    if (plan.metadata !== undefined) copy.metadata = JSON.parse(plan.metadata);
    this.queue(copy);
  }

  /** @param {unknown} key */
  async delete(key) {
    const proxy = await this.route();
    if (proxy) return proxy.delete(key);
    await this.kv.delete(/** @type {string} */ (key));
    this.queue({ key: checkKey(key, "DELETE"), deleted: true, acked_at: Date.now() });
  }

  /** @param {any} [options] */
  async list(options) {
    const proxy = await this.route();
    return proxy ? proxy.list(options) : this.kv.list(options);
  }

  sampled() {
    return this.cfg.sampleRate > 0 && this.cfg.random() < this.cfg.sampleRate;
  }

  /**
   * @param {string} key
   * @param {Uint8Array|null} bytes
   */
  noteRead(key, bytes) {
    this.reads.push({ key, bytes, at: Date.now() });
    this.schedule();
  }

  /** @param {object} copy */
  queue(copy) {
    this.copies.push(copy);
    this.schedule();
  }

  /**
   * One batch per quiet spell of the invocation: the timer restarts with
   * each item, and a full batch goes at once.
   */
  schedule() {
    if (this.copies.length + this.reads.length >= this.cfg.maxCopies) {
      clearTimeout(this.timer);
      this.timer = undefined;
      const wake = this.wake;
      this.wake = undefined;
      if (wake) wake();
      else this.ctx.waitUntil(this.send());
      return;
    }
    clearTimeout(this.timer);
    if (!this.wake) {
      this.ctx.waitUntil(
        new Promise((resolve) => {
          this.wake = () => resolve(undefined);
        }).then(() => this.send()),
      );
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const wake = this.wake;
      this.wake = undefined;
      wake?.();
    }, this.cfg.idleMs);
  }

  /**
   * Sends what is queued now; the bot may await it (at the end of a
   * scheduled event, say), but need not.
   */
  async flush() {
    clearTimeout(this.timer);
    this.timer = undefined;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
    await this.send();
  }

  /** Sends the queued items as one batch; never throws. */
  async send() {
    const copies = this.copies.splice(0);
    const noted = this.reads.splice(0);
    if (copies.length === 0 && noted.length === 0) return;
    try {
      const reads = (await Promise.all(noted.map((r) => this.digest(r)))).filter((r) => r !== null);
      /** @type {any} */
      const batch = { copies, reads };
      if (this.namespaceId) batch.namespace = this.namespaceId;
      this.stats.requests++;
      const resp = await this.fetch(this.origin + INGEST_PATH, {
        method: "POST",
        headers: { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" },
        body: JSON.stringify(batch),
      });
      await resp.body?.cancel();
      if (resp.status === 409) {
        // The stage takes no copies any more: read it again on the next call.
        const s = stages.get(this.stageKey);
        if (s) s.at = 0;
      }
      if (!resp.ok) throw new Error(`ingest answered ${resp.status}`);
      this.stats.batches++;
      this.stats.copies += copies.length;
      this.stats.reads += reads.length;
    } catch (e) {
      this.stats.failed += copies.length + noted.length;
      console.warn(JSON.stringify({ event: "kvshadow_tee_send_failed", items: copies.length + noted.length, error: String(/** @type {any} */ (e)?.message ?? e) }));
    }
  }

  /**
   * A read's digest; the expiry comes from a listing of the key, after the
   * response, as the binding's get does not return it. When the listing
   * fails or does not show the key (deleted since, or not listed yet), the
   * expiry is unknown and the read is not sent (null): the proxy would
   * take a missing expiry for none.
   * @param {{key: string, bytes: Uint8Array|null, at: number}} r
   */
  async digest(r) {
    if (r.bytes === null) return { key: r.key, found: false, read_at: r.at };
    const [sum, listed] = await Promise.all([
      crypto.subtle.digest("SHA-256", r.bytes),
      this.kv.list({ prefix: r.key, limit: 1 }).catch(() => null),
    ]);
    const hex = [...new Uint8Array(sum)].map((b) => b.toString(16).padStart(2, "0")).join("");
    /** @type {any} */
    const out = { key: r.key, found: true, sha256: hex, length: r.bytes.byteLength, read_at: r.at };
    const k = listed?.keys?.[0];
    if (!k || k.name !== r.key) return null;
    if (k.expiration) out.expiration = k.expiration;
    return out;
  }
}
