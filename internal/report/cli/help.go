package cli

// helpText is --help: what the command is for, how to run it, and what it
// answers, with examples.
const helpText = `shadow-report compares the Workers KV namespace (the primary) with the MongoDB
database (the shadow) key by key, prints a parity report, and can repair what
differs. It is what you run to decide when to cut over, and what a cutover
pipeline gates on.

USAGE
  shadow-report [flags]

CONNECTION (secrets come from the environment only, never from flags)
  CLOUDFLARE_API_TOKEN          API token with Workers KV Storage read (and, to repair, edit)
  CLOUDFLARE_ACCOUNT_ID         or --cf-account ID
  CLOUDFLARE_KV_NAMESPACE_ID    or --cf-namespace ID
  CLOUDFLARE_BASE_URL           or --cf-base-url URL: the kv-emulator, a proxy
                                (default https://api.cloudflare.com/client/v4/)
  --cf-max-bulk-write N         pairs per bulk write or delete request, 1..10000 (default
                                10000; 1000 through a bridge Worker, a Worker's limit)
  MONGODB_URI                   mongodb:// or mongodb+srv:// connection string
  MONGODB_DB                    or --mongo-db NAME (default miti99bot, the bot's, whatever the
                                URI names, as the bot's own store does; a URI that names
                                another database is warned about)
  --demo                        no accounts: an in-process Workers KV emulator and an
                                in-memory shadow, seeded with one divergence of each kind

SCOPE
  --module NAME[,NAME]          only these modules (repeatable); "wordle" means keys "wordle:..."
  --prefix P[,P]                only keys starting with these prefixes (repeatable)
  --exclude-module NAME[,NAME]  skip these modules
  --exclude-prefix P[,P]        skip keys starting with these (repeatable; a bot's own
                                bookkeeping, such as __retry:): neither compared, counted
                                nor repaired; the report says how many were skipped.
                                __kvshadow: (kvshadow's own keys) is always skipped. Give
                                kvshadow-proxy the same list
  --sample RATE                 compare a fraction of the keys, e.g. 0.01 for a quick look;
                                chosen by key hash, so reruns pick the same keys (default 1)
  --keys-file FILE              only the keys listed there, one a line, read in bulk without
                                listing the stores: the keys a dual-write store left dirty
                                (DirtyKeys), cheap to check and repair; not a full scan

COMPARISON
  --ttl-tolerance D             expiries this close match (default 5s; 0s means exact)
  --min-parity 99.9%|0.999      the gate: exit 0 at or above it (default 100%); a percentage
                                with its % sign, or a fraction of 1: 0.999 is 99.9%, and a
                                bare number above 1 is refused. The verdict line always goes
                                to stderr, whatever the output
  --settle D                    read every key that differed again D after the scan read it
                                (default 70s: Workers KV's consistency window and the proxies'
                                lanes; 0s reads nothing again; the demo's default is 0s), up to
                                10,000 keys: one that agrees then counts as agreeing, the same
                                difference as divergent, one that changed (a write or its copy
                                was on its way) is left for later, named, and out of the gated
                                parity. So runs under traffic agree, and a write around the
                                layer, which holds, fails every one. Not with --repair, which
                                says at once what it would copy

OUTPUT
  --format table|json|markdown|html
                                default table, or guessed from --out's extension
  --out FILE                    write the report there instead of stdout
  --keys hmac|plain|hidden      how divergent keys appear (default hmac: module plus a keyed
                                hash; set KVSHADOW_KEY_SECRET, the proxy's, so hashes match
                                across runs and the proxy's /dirty, and you can follow a key;
                                without it each run draws its own). Values never appear,
                                only their length and a keyed hash.
  --max-keys N                  divergent keys listed (default 1000; counts stay exact)
  --progress auto|always|lines|never
                                progress on stderr (default auto: one line redrawn every second
                                on a terminal, else a plain "progress: ..." line every 30s, for
                                logs, CI and cron; always redraws, lines never does). It shows
                                the share done when --expected-keys or --keys-file gives the
                                total, and "waiting for ...'s API budget (resumes in N s)"
                                while the budget holds the scan back
  --progress-every D            time between progress lines (default 1s redrawn, 30s as lines)

LONG SCANS
  --checkpoint FILE             save progress there; rerun the same command to resume where
                                it stopped (it says so); removed when the scan completes
  --cf-budget N/D               Workers KV requests allowed per window (default 1200/5m, the
                                account API limit; lower it if other tools share the account)
  --mongo-budget N/D            MongoDB requests per window (default unlimited)
  --expected-keys N             lets the progress line estimate the time left
  --concurrency N               batches read at once (default 4)
  --batch N                     keys read per request, at most 100 (default 100)

REPAIR AND BACKFILL
  --repair                      plan to copy the authoritative side over every divergent key
                                (its value and expiry, in bulk), or delete it where the
                                authoritative side has none; a dry run that only counts
  --apply                       perform the repair, then re-read those keys to verify them
  --authoritative primary|shadow
                                the side copied from. By default the stage document says
                                (kvshadow-proxy's, in --control-db): Workers KV up to
                                handover, MongoDB from live on; primary when there is none.
                                A choice that disagrees with the stage is refused
  --force-authoritative         take --authoritative against the stage document
  --control-db DB               where kvshadow-proxy keeps the stage document (default the
                                --mongo-db database, as the proxy's --control-db)
  Every report says which store it took as the truth, and why. A full run (every key,
  not resumed) is recorded beside the stage document with its ID, which kvshadow-proxy's
  POST /reconciliation takes to clear an overflowed settle set.
  A repair into an empty shadow is the initial backfill.

EXIT CODES
  0  parity is at least --min-parity (after the repair, when applied)
  1  parity is below --min-parity
  2  error: bad flags, an interrupted scan, or a store unreachable or refusing: both
     stores are checked at once before the scan (one Workers KV request), and each
     problem is said in one line

EXAMPLES
  Try it without any account:
    shadow-report --demo
    shadow-report --demo --format html --out parity.html

  A full report on the terminal, then one for a change request:
    export CLOUDFLARE_API_TOKEN=... CLOUDFLARE_ACCOUNT_ID=... CLOUDFLARE_KV_NAMESPACE_ID=...
    export MONGODB_URI='mongodb+srv://...'
    shadow-report
    shadow-report --format markdown --out parity.md

  A quick look at two modules, 1% of their keys:
    shadow-report --module wordle,trading --sample 0.01

  Gate a cutover in CI: fail the step below 99.9%, keep JSON for the record:
    shadow-report --min-parity 99.9% --format json --out parity.json

  Scan millions of keys in the background, resumable:
    shadow-report --checkpoint scan.ckpt --expected-keys 4000000 --out parity.html
    (interrupted? run the same command again)

  Backfill an empty MongoDB from Workers KV, then check:
    shadow-report --repair            # dry run: what would be written
    shadow-report --repair --apply    # write it, verify it
    shadow-report                     # 100% expected

  After the cutover (stage live), repair Workers KV from MongoDB for a rollback path:
    shadow-report --repair --apply    # the stage says MongoDB is authoritative

  Against the local Workers KV emulator (cmd/kv-emulator) and a local MongoDB:
    KV_EMULATOR_TOKEN=dev-token kv-emulator -namespace bot-kv &
    CLOUDFLARE_ACCOUNT_ID=local CLOUDFLARE_KV_NAMESPACE_ID=bot-kv CLOUDFLARE_API_TOKEN=dev-token \
    MONGODB_URI=mongodb://127.0.0.1:27017/miti99bot \
    shadow-report --cf-base-url http://127.0.0.1:8787/client/v4/ --cf-budget unlimited
`
