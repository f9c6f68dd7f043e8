package service

// Help is the manual --help prints.
const Help = `kvshadow-proxy: the Workers KV REST API over the dual-write store.

Any Workers KV REST client (cloudflare-go, wrangler's API calls, the bot's
kvshadow binding, curl) points its base URL here instead of Cloudflare. Each
namespace ID is served by one dual-write store: writes go to the
authoritative store (Workers KV, then MongoDB from the live stage on) and
are copied to the other; the stage is shared by every instance through a
control document in MongoDB.

TRY IT (no account needed)
  kvshadow-proxy --demo
      an emulated Workers KV account as the primary, an in-memory shadow,
      loopback only; prints the URLs and the environment a client needs.
      Not a tee check: it compares what a tee sends with its own emulator,
      which your Worker never wrote, so every copy would look divergent.
      For a Worker with the tee, make tee-check BOT=path/to/worker.

RUN IT
  export CLOUDFLARE_ACCOUNT_ID=... CLOUDFLARE_KV_NAMESPACE_ID=...
  export CLOUDFLARE_API_TOKEN=...        # Workers KV Storage permission
  export MONGODB_URI=mongodb://...       # the shadow, and the control document
  export KVSHADOW_TOKEN=...              # what clients send as Bearer token
  export KVSHADOW_ADMIN_TOKEN=...        # what the admin API requires
  kvshadow-proxy --listen 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem

  A Worker reaches the service by a hostname with TLS (for example through a
  Cloudflare Tunnel); the admin API stays on loopback or a private network.

SECRETS (from the environment, or a file; never a flag, which ps shows)
  CLOUDFLARE_API_TOKEN   --cf-token-file FILE     the primary's API token
  MONGODB_URI            --mongo-uri-file FILE    the shadow's connection string
  KVSHADOW_TOKEN         --token-file FILE        the clients' token (required)
  KVSHADOW_ADMIN_TOKEN   --admin-token-file FILE  the admin token (required; not the clients')
  KVSHADOW_KEY_SECRET    --key-secret-file FILE   HMAC secret of redacted keys; give every
                                                  instance the same one so hashes agree

WHERE
  --listen ADDR            the Workers KV API (default 127.0.0.1:8790)
  --tls-cert F --tls-key F serve it over TLS (the admin listener too, unless given its own)
  --admin-tls-cert F --admin-tls-key F
                           the admin listener's own certificate
  --public-url URL         where clients reach it (a tunnel's https://kv.example.com): the
                           root the printed client environment names (default the listener)
  --max-concurrent N       requests served at once; one more gets 503 with Retry-After (64)
  --memory-budget SIZE     the process's memory, such as 512MiB or 2GiB: what the requests
                           under way may hold together (bodies, answers, tee batches) is
                           three quarters of it; past that a request waits 2 s, then gets
                           503 with Retry-After (512MiB)
  --max-per-client N       requests one client (remote address; the tee's apart) is served
                           at once (default three quarters of --max-concurrent)
  --min-body-rate B        bytes a second a body must average after 10 s, or 408 (1024)
  --max-connections N      connections the front holds open; past it 503, and a log line (512)
  --read-timeout D         reading one request, its body included (2m)
  --write-timeout D        answering one request; a store that has not answered a tenth
                           of it before (at most 5 s) gets 503 with Retry-After (2m)
  --admin-listen ADDR      the admin API (default 127.0.0.1:8791)
  --account ID             CLOUDFLARE_ACCOUNT_ID: the account clients name in paths
  --namespace ID[=DB]      namespaces served, repeatable or comma-separated
                           (default CLOUDFLARE_KV_NAMESPACE_ID); each its own MongoDB
                           database when there are several
  --primary-url URL        CLOUDFLARE_BASE_URL: the Workers KV API root, or a bridge
                           Worker that speaks it (default Cloudflare's)
  --mongo-db DB            MONGODB_DB: the shadow database (default miti99bot, the bot's,
                           whatever the URI names: the bot's store opens it so; a URI
                           naming another database is warned about at start)
  --control-db DB          where the stage document and heartbeats live (default the
                           first namespace's database)
  --unauthenticated-loopback
                           serve without any token; refused unless both listeners are on
                           loopback

STAGE AND INSTANCES
  --stage NAME             off, dualwrite, shadow, handover, live, rampdown, complete: written
                           only when there is no stage document yet (default off);
                           afterwards change it with PUT /stage on the admin API. Refused
                           (a new or mistyped database or namespace): a stage document of
                           another pairing (account, namespaces, databases), a first start
                           past shadow, a start from live on with MongoDB empty, Workers KV not
  --new-pairing            I mean it: record this pairing (and seed --stage) past the first two
  --instance NAME          this instance on the control board (default host:admin-port)
  --poll-interval D        how often the stage document is read (default 2s)
  --heartbeat-interval D   how often the heartbeat is written (default 5s)
  --probe-interval D       how often readiness reads the authoritative store (default 15s)

DUAL-WRITE
  --lanes N --lane-depth N    ordered copy lanes and their depth (16, 128)
  --shadow-timeout D          bound of each copy (5s)
  --compare-rate F            share of keys whose reads are compared (0.05)
  --consistency-window D      Workers KV's (60s); 0 for a primary that reads its writes
  --fence-interval D          how long the flip between handover and live waits after the
                              last copy of a binding write and after handover began (65s:
                              --tee-lease + --tee-invocation and 4s to spare; shorter than
                              those two is refused); then the proxy compares the whole
                              namespace with Workers KV (two consistency windows later) and
                              repairs MongoDB toward it before the flip can go; 0 when no
                              tee writes a binding (proxy mode only: no comparison). From
                              live on, a late copy acked more than this after the flip (or
                              after a start in live or later) is refused as not credible
  --tee-lease D               how long a tee may route by a stage answer (30s; the answer's
                              lease_ms; a tee never trusts it longer than its stageTtlMs)
  --tee-invocation D          a stage read and the longest bot invocation after it, its
                              waitUntil included (31s: 1s + Cloudflare's 30s)
  --ingest-max-age D          how far before its arrival a tee copy's acked_at is trusted
                              (5m); an older one is refused, its key verified instead
  --ingest-max-lead D         how far after its arrival (2s); later is refused
  --repair-interval D         how often dirty keys are repaired (1m)
  --sweep-interval D          how often each shadow database's expired documents and
                              orphaned chunks are swept (1m)
  --max-settle-keys N         keys each namespace's settle set holds (100000); past it keys go
                              untracked, reconciliation_needed is raised, and a full
                              shadow-report then POST /reconciliation clears it
  --shadow-rate N             requests a second the instance's own work makes to MongoDB,
                              over every namespace: copies and comparisons wait for it in
                              their lanes (a copy that would wait past its life is dropped
                              as timeout, its key dirty for repair), verification waits,
                              repairs without room are deferred; counted in /stats
                              shadow_pacing. An Atlas M0 sustains about 100 operations a
                              second for every client together: 80 leaves the bot room,
                              divided by the replicas. Callers never wait on it (0: no cap)
  --exclude-prefix P[,P]      keys left out of the migration (a bot's own bookkeeping, such
                              as the JavaScript bot's __retry:), repeatable: written to the
                              authoritative store alone, never copied, compared, verified,
                              repaired or listed; the tee is told them by the stage answer
                              (exclude_prefixes) and drops their copies. __kvshadow: is
                              always excluded. Give shadow-report the same list
  --breaker-failures N        consecutive failed copies that open the breaker (5)
  --breaker-open-timeout D    how long it stays open before probing (30s)

DURABLE STATE
  --journal-dir DIR        keep each namespace's settle set (keys not yet verified in both
                           stores) in DIR/<namespace>.journal (bbolt, locked); a restart on
                           the same directory verifies and repairs every key it holds

SHUTDOWN (SIGTERM or SIGINT; a second signal exits at once)
  --shutdown-delay D       answer /readyz 503 this long before closing (default 0)
  --shutdown-grace D       let requests under way finish (default 10s)
  --drain-timeout D        drain the copy lanes (default 20s)
  --dirty-dir DIR          write the keys left dirty to DIR/<namespace>.keys, for
                           shadow-report --keys-file

TEE MODE (the bot keeps its binding as the primary; copies come after its response)
  POST <origin>/kvshadow/v1/ingest and GET <origin>/kvshadow/v1/stage on the front,
  with the clients' token (not served with --unauthenticated-loopback)

ADMIN API (Authorization: Bearer $KVSHADOW_ADMIN_TOKEN)
  GET /stage, PUT /stage {"stage":"live"}, GET /stats, GET /dirty[?keys=plain], GET /unsettled,
  POST /repair, POST /reconciliation,
  DELETE /instances/ID, GET /metrics (Prometheus); GET /healthz and GET /readyz need no token.

TELEMETRY
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_EXPORTER, ... as in
  docs/telemetry.md; GET /metrics serves the same instruments to Prometheus.

AT START
  Each store is read once and its answer logged in one line. A store that refuses
  the settings (the token, account or namespace; MongoDB's credentials) stops the
  start with that line (exit 2). A store that does not answer is a warning: the
  proxy starts, and /readyz (with the admin token) names the store and why. When
  MongoDB holds the stage document and does not answer, the proxy serves in the
  last stage it ran (kept in --journal-dir) if Workers KV is authoritative there
  (off, dualwrite, shadow, handover), copies to MongoDB skipped and their keys
  kept dirty; otherwise it answers 503 until the stage document can be read.

EXIT CODES
  0 stopped by a signal after draining (keys left dirty are logged and kept)
  1 failed to start or serve
  2 bad flags or environment: a flag, a variable, a MONGODB_URI that is not a
    connection string, or a store that refuses the settings at start
`
