/**
 * kvshadowTee: the bot's own binding stays its primary, with no added
 * latency; a copy of each write, and digests of a sample of reads, go to
 * kvshadow-proxy after the response, through ctx.waitUntil. From the
 * handover stage on (the stage answer's route is "proxy"), reads and writes
 * go through the proxy instead; a write is never routed on a stage answer
 * older than its lease (stageTtlMs).
 * @module
 */
import { checkKey, kvError, putPlan, valueType } from "./limits.js";
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
 * @property {number} [stageTtlMs] how long a stage answer is trusted to route a write (its lease); 30 s by default. The proxy's fence interval must cover it, plus stageTimeoutMs and the longest invocation
 * @property {number} [stageTimeoutMs] how long a stage read may take; 1 s by default. A write that finds no answer younger than stageTtlMs then goes where it can go safely, or is refused (see route)
 * @property {string[]} [excludePrefixes] keys left out of the migration (the bot's own bookkeeping, such as "__retry:"): written to the binding alone, no copy or read digest sent. "__kvshadow:" always is, and so is every prefix the proxy's stage answer names (its --exclude-prefix)
 * @property {typeof fetch} [fetch]
 * @property {() => number} [random] for sampling; Math.random by default
 * @property {() => number} [now] milliseconds since the epoch, for the stage's age; Date.now by default
 * @property {(ms: number) => Promise<void>} [sleep] the pause before a batch is sent again; setTimeout by default
 */

/**
 * @typedef {Object} TeeStats
 * @property {number} batches batches sent and accepted
 * @property {number} copies copies accepted by the proxy
 * @property {number} reads read digests sent
 * @property {number} failed items the proxy did not take (down, refused); settling or a reconciliation repairs their keys
 * @property {number} requests requests the tee made to the proxy (stage reads and retries included)
 * @property {number} retries batches sent again after the proxy could not take them
 * @property {number} refused calls (reads and writes) refused because the stage could not be learned (see route)
 * @property {number} excluded copies and read digests not sent because their key is under an excluded prefix
 */

/**
 * What an isolate knows of the stage, per proxy and namespace, shared by
 * every invocation of the isolate.
 * @typedef {Object} StageSeen
 * @property {boolean} known an answer came at least once
 * @property {number} at when the last answer was asked for (cfg.now): its lease runs from there
 * @property {number} [lease] the answer's lease_ms, when the proxy says one
 * @property {number} failedAt when the last read failed, 0 after an answer
 * @property {string} [reason] why the last read failed, as the caller is told it
 * @property {boolean} proxy the answer routes reads and writes through the proxy
 * @property {boolean} [handover] this isolate saw the handover (a proxy answer routing through it, or STAGE_KEY in the binding) and no answer since said binding: a missing STAGE_KEY is then no reason to serve the binding
 * @property {number} [generation] the stage document's generation, when the proxy says it
 * @property {string[]} [excludePrefixes] the key prefixes the proxy leaves out (its answer's exclude_prefixes)
 * @property {string} [account]
 * @property {string} [namespace]
 * @property {Promise<void>} [pending] the read in flight
 */

/** @type {Map<string, StageSeen>} */
const stages = new Map();

/**
 * The copies this isolate could not send, per proxy and namespace: sent
 * again, first, with the next batch of any invocation (best effort: the
 * proxy's handover comparison, not this, keeps their writes).
 * @type {Map<string, object[]>}
 */
const unsent = new Map();
/** The most copies an isolate keeps for a later batch; older ones go first. */
const MAX_UNSENT = 1000;

/** The reasons already logged by this isolate (each is logged once). */
const logged = new Set();

/** Forgets the stages this isolate read (tests; a redeploy does it too). */
export function forgetStages() {
  stages.clear();
  unsent.clear();
  logged.clear();
}

/**
 * The key of the bot's namespace where kvshadow-proxy says that the
 * handover began (dualwrite.StageKey, "handover" from then until it goes
 * back to shadow, when it deletes it): read from the binding by a tee that
 * cannot learn the stage from the proxy. Any value means the binding may
 * not be authoritative. Keys under "__kvshadow:" are kvshadow's own.
 */
export const STAGE_KEY = "__kvshadow:stage";

/** The code of the error a write gets when the tee cannot learn where to route it. */
export const STAGE_UNKNOWN = "kvshadow_stage_unknown";

/** The prefix of kvshadow's own keys in a bot's namespace: never copied. */
export const RESERVED_PREFIX = "__kvshadow:";

/** How many times a batch is sent before it counts as failed, and the pause before each retry. */
const SEND_RETRY_MS = [100, 400, 1500, 3000];

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
    const exclude = cfg.excludePrefixes ?? [];
    if (!Array.isArray(exclude) || exclude.some((p) => typeof p !== "string" || p === "")) {
      throw new TypeError("kvshadowTee: excludePrefixes must be an array of non-empty strings");
    }
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
      sleep: cfg.sleep ?? ((/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms))),
    };
    this.exclude = [RESERVED_PREFIX, ...exclude];
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
    this.stats = { batches: 0, copies: 0, reads: 0, failed: 0, requests: 0, retries: 0, refused: 0, excluded: 0 };
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    this.timer = undefined;
    /** @type {(() => void)|undefined} */
    this.wake = undefined;
    /** @type {ProxyNamespace|undefined} */
    this.proxy = undefined;
  }

  /**
   * Where this call goes: the proxy (a ProxyNamespace) or the binding
   * (undefined), and the generation of the stage that said so.
   *
   * A write is routed only on a stage answer younger than its lease
   * (stageTtlMs, or the answer's lease_ms when shorter: the lease the
   * proxy's fence is derived from); an older one is read again first, for
   * at most stageTimeoutMs. A stale proxy stage is read again after the
   * response of a read (a read through the proxy is never older than any
   * acknowledged write); a stale binding stage is read again first (once
   * per lease while the proxy does not answer).
   *
   * When no answer comes: a call whose last stage known went through the
   * proxy goes there (the proxy serves the authoritative store of
   * whatever stage it is in). Any other call (the last stage known was the
   * binding, or none is: a fresh isolate) reads STAGE_KEY from the
   * binding, which kvshadow-proxy writes before the handover begins and
   * keeps until it goes back to shadow: absent, and this isolate never saw
   * the handover, Workers KV is authoritative and the binding serves the
   * call, as without kvshadow; present (whatever it says), or absent once
   * this isolate saw the handover (a key deleted behind the proxy's back:
   * the proxy writes it again within its repair interval), the stage is
   * asked once more and, without an answer, the call is refused (503,
   * code kvshadow_stage_unknown, with the proxy's reason: unreachable, the
   * token refused, no answer in time), never served from a binding that
   * may no longer be authoritative.
   * @param {"GET"|"LIST"|"PUT"|"DELETE"} op
   * @returns {Promise<{proxy: ProxyNamespace|undefined, generation: number|undefined}>}
   */
  async route(op) {
    const write = op === "PUT" || op === "DELETE";
    let s = stages.get(this.stageKey);
    if (!s) {
      s = { known: false, at: 0, failedAt: 0, proxy: false };
      stages.set(this.stageKey, s);
    }
    if (unsent.get(this.stageKey)?.length && !this.wake) this.schedule();
    if (!this.fresh(s)) {
      const ttl = this.ttl(s);
      const failedLately = s.failedAt !== 0 && this.cfg.now() - s.failedAt <= ttl;
      let asked = false;
      if (write || (!(s.known && s.proxy) && !failedLately)) {
        asked = true;
        await (s.pending ?? this.readStage(s));
      } else if (!s.pending && !failedLately) {
        this.ctx.waitUntil(this.readStage(s));
      }
      if (!this.fresh(s) && !(s.known && s.proxy)) {
        // No answer to route by, and the last one (if any) said binding:
        // the binding serves only if what the proxy left in it says that
        // Workers KV is still authoritative.
        const mark = await this.stageMark(s);
        if (mark !== null) {
          if (!asked) await (s.pending ?? this.readStage(s));
          if (!this.fresh(s)) this.refuse(op, s, mark);
        }
      }
    }
    if (!s.proxy) return { proxy: undefined, generation: s.generation };
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
    return { proxy: this.proxy, generation: s.generation };
  }

  /**
   * What kvshadow-proxy left in the binding at STAGE_KEY: null while
   * Workers KV is authoritative (absent, and this isolate never saw the
   * handover), else what it says ("handover", or why it is no reason to
   * serve the binding).
   * @param {StageSeen} s
   * @returns {Promise<string|null>}
   */
  async stageMark(s) {
    try {
      const v = await this.kv.get(STAGE_KEY);
      if (v !== null) s.handover = true;
      return v !== null ? String(v).slice(0, 64) : s.handover ? "nothing, though this isolate saw the handover" : null;
    } catch (e) {
      return `unreadable (${String(/** @type {any} */ (e)?.message ?? e)})`;
    }
  }

  /**
   * Refuses a call that no stage allows: from the handover on the binding
   * is not authoritative, and the proxy did not answer. Logged once per
   * reason by the isolate.
   * @param {"GET"|"LIST"|"PUT"|"DELETE"} op
   * @param {StageSeen} s
   * @param {string} mark
   * @returns {never}
   */
  refuse(op, s, mark) {
    this.stats.refused++;
    const reason = s.reason ?? `kvshadow-proxy did not say the stage within ${this.cfg.stageTimeoutMs} ms`;
    if (!logged.has(reason)) {
      logged.add(reason);
      console.warn(JSON.stringify({ event: "kvshadow_tee_stage_unknown", reason, binding_says: mark }));
    }
    throw kvError(
      op,
      503,
      `${reason}, and ${STAGE_KEY} in the binding says ${mark}: from the handover on the binding is not authoritative, so the call is refused rather than served from it`,
      { code: STAGE_UNKNOWN },
    );
  }

  /**
   * How long an answer is trusted: stageTtlMs, or the proxy's lease when
   * it says a shorter one.
   * @param {StageSeen} s
   */
  ttl(s) {
    return s.lease !== undefined ? Math.min(this.cfg.stageTtlMs, s.lease) : this.cfg.stageTtlMs;
  }

  /** @param {StageSeen} s */
  fresh(s) {
    return s.known && this.cfg.now() - s.at <= this.ttl(s);
  }

  /**
   * Reads the stage. Its lease runs from when it was asked for, which is
   * no later than when the proxy answered. When the proxy cannot say (down,
   * slow, refusing, or an answer the tee does not understand), what was
   * known stays, as old as it was.
   * @param {StageSeen} s
   */
  readStage(s) {
    s.pending = (async () => {
      const asked = this.cfg.now();
      try {
        const q = this.namespaceId ? `?namespace=${encodeURIComponent(this.namespaceId)}` : "";
        this.stats.requests++;
        const resp = await this.fetch(this.origin + STAGE_PATH + q, {
          headers: { Authorization: `Bearer ${this.token}` },
          signal: AbortSignal.timeout(this.cfg.stageTimeoutMs),
        });
        if (!resp.ok) {
          await resp.body?.cancel();
          s.reason =
            resp.status === 401 || resp.status === 403
              ? `kvshadow-proxy refused the token (${resp.status})`
              : `kvshadow-proxy answered the stage with ${resp.status}`;
          throw new Error(s.reason);
        }
        const body = await resp.json();
        // From handover on the proxy says "route": "proxy"; a proxy that
        // does not say route routes through itself where MongoDB is
        // authoritative.
        const route = body.route ?? (body.authoritative === "shadow" ? "proxy" : "binding");
        if (route !== "proxy" && route !== "binding") {
          s.reason = "kvshadow-proxy's stage answer has no route the tee knows";
          throw new Error(s.reason);
        }
        const lease = Number.isSafeInteger(body.lease_ms) && body.lease_ms > 0 ? body.lease_ms : undefined;
        Object.assign(s, {
          known: true,
          at: asked,
          failedAt: 0,
          reason: undefined,
          lease,
          proxy: route === "proxy",
          handover: route === "proxy",
          // 0 is a proxy that follows no stage document: no generation.
          generation: Number.isSafeInteger(body.generation) && body.generation > 0 ? body.generation : undefined,
          account: body.account || undefined,
          namespace: body.namespace || undefined,
          excludePrefixes: Array.isArray(body.exclude_prefixes) ? body.exclude_prefixes.filter((p) => typeof p === "string" && p !== "") : [],
        });
      } catch (e) {
        s.failedAt = this.cfg.now();
        const err = /** @type {any} */ (e);
        if (err?.name === "TimeoutError" || err?.name === "AbortError") {
          s.reason = `kvshadow-proxy did not say the stage within ${this.cfg.stageTimeoutMs} ms`;
        } else if (!String(err?.message).startsWith("kvshadow-proxy")) {
          s.reason = `kvshadow-proxy unreachable (${String(err?.message ?? err)})`;
        }
      } finally {
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
    const { proxy } = await this.route("GET");
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
    const { proxy, generation } = await this.route("PUT");
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
    if (generation !== undefined) copy.generation = generation;
    this.queue(copy);
  }

  /** @param {unknown} key */
  async delete(key) {
    const { proxy, generation } = await this.route("DELETE");
    if (proxy) return proxy.delete(key);
    await this.kv.delete(/** @type {string} */ (key));
    /** @type {any} */
    const copy = { key: checkKey(key, "DELETE"), deleted: true, acked_at: Date.now() };
    if (generation !== undefined) copy.generation = generation;
    this.queue(copy);
  }

  /** @param {any} [options] */
  async list(options) {
    const { proxy } = await this.route("LIST");
    return proxy ? proxy.list(options) : this.kv.list(options);
  }

  sampled() {
    return this.cfg.sampleRate > 0 && this.cfg.random() < this.cfg.sampleRate;
  }

  /**
   * Whether key is left out of the migration (counted when it is): under
   * one of the tee's own excludePrefixes or the proxy's.
   * @param {string} key
   */
  excluded(key) {
    const theirs = stages.get(this.stageKey)?.excludePrefixes ?? [];
    if (!this.exclude.some((p) => key.startsWith(p)) && !theirs.some((p) => key.startsWith(p))) return false;
    this.stats.excluded++;
    return true;
  }

  /**
   * @param {string} key
   * @param {Uint8Array|null} bytes
   */
  noteRead(key, bytes) {
    if (this.excluded(key)) return;
    this.reads.push({ key, bytes, at: Date.now() });
    this.schedule();
  }

  /** @param {{key: string}} copy */
  queue(copy) {
    if (this.excluded(copy.key)) return;
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

  /**
   * Sends the queued items, after the copies the isolate kept from an
   * earlier batch, as one batch; never throws. A batch the proxy could
   * take later (unreachable, 429, 5xx) is sent again within the invocation
   * (after 0.1, 0.4, 1.5 and 3 s); what fails then is counted, logged, and
   * its copies kept for the isolate's next batch (at most MAX_UNSENT).
   * None of this is what keeps an acknowledged write: the proxy's
   * handover comparison does, whether a copy arrives or not.
   */
  async send() {
    const kept = unsent.get(this.stageKey) ?? [];
    unsent.delete(this.stageKey);
    const copies = [...kept, ...this.copies.splice(0)];
    const noted = this.reads.splice(0);
    if (copies.length === 0 && noted.length === 0) return;
    const reads = (await Promise.all(noted.map((r) => this.digest(r).catch(() => null)))).filter((r) => r !== null);
    /** @type {any} */
    const batch = { copies, reads };
    if (this.namespaceId) batch.namespace = this.namespaceId;
    const body = JSON.stringify(batch);
    let error = "";
    for (let attempt = 0; ; attempt++) {
      let retry = true;
      try {
        this.stats.requests++;
        const resp = await this.fetch(this.origin + INGEST_PATH, {
          method: "POST",
          headers: { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" },
          body,
        });
        await resp.body?.cancel();
        if (resp.ok) {
          this.stats.batches++;
          this.stats.copies += copies.length;
          this.stats.reads += reads.length;
          return;
        }
        if (resp.status === 409) {
          // The stage takes no copies: read it again before the next write.
          const s = stages.get(this.stageKey);
          if (s) s.at = -Infinity;
        }
        retry = resp.status === 429 || resp.status >= 500;
        error = `ingest answered ${resp.status}`;
      } catch (e) {
        error = String(/** @type {any} */ (e)?.message ?? e);
      }
      if (!retry || attempt >= SEND_RETRY_MS.length) {
        if (retry) {
          // Kept for the isolate's next batch; the oldest go past the cap.
          const keep = [...(unsent.get(this.stageKey) ?? []), ...copies];
          unsent.set(this.stageKey, keep.slice(-MAX_UNSENT));
        }
        break;
      }
      this.stats.retries++;
      await this.cfg.sleep(SEND_RETRY_MS[attempt]);
    }
    this.stats.failed += copies.length + noted.length;
    console.warn(JSON.stringify({ event: "kvshadow_tee_send_failed", items: copies.length + noted.length, error }));
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
