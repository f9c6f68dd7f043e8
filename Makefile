# kvshadow: `make test` is what CI runs; `make demo` is the main job.
SHELL := /bin/bash
GO ?= go
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 20000x
BENCHTIME ?= 1s
# The integration tests are their own module, so that FerretDB (the embedded
# MongoDB-compatible server) never reaches a library user's build; so are the
# deployment forms' tests (deploy/: the Kubernetes and kustomize libraries).
MODULES := . tests demo deploy

.PHONY: alerts bot-bench deploy demo image mongo rehearse tee-check test testlog lint fmt-check vet staticcheck unit workers workers-deps nodeinterop-deps wrangler-deps integration fuzz bench bench-all

# The main job: the whole migration on embedded servers (see demo/doc.go).
# Built first, saying so: the first build compiles the embedded server.
DEMO_FLAGS ?=
DEMO_BIN := $(CURDIR)/.demo/bin
demo:
	@echo "make demo: building (the first time takes a few minutes: it compiles the embedded MongoDB-compatible server; later builds take seconds)"
	@cd demo && $(GO) build -o $(DEMO_BIN)/kvshadow-demo .
	@echo "make demo: running the migration (about 70 seconds)"
	@$(DEMO_BIN)/kvshadow-demo -dir $(CURDIR)/.demo $(DEMO_FLAGS)

# The bot team's guide (docs/bot-guide.md) on one machine: a bot with the
# real bot's storage shape and flags (workers/test/realbot) and the bridge in
# workerd (miniflare), kvshadow-proxy over the bridge and the embedded
# MongoDB-compatible server; from the bot's own dual write through every
# stage to complete, then the bot on its own MongoKVStore and the proxy
# retired. Its reports stay in .rehearse/.
rehearse: workers-deps
	@echo "make rehearse: building (the first time takes a few minutes: it compiles the embedded MongoDB-compatible server)"
	@cd tests && $(GO) build -o $(CURDIR)/bin/rehearse ./rehearse
	@echo "make rehearse: running the guide's steps (about five minutes: the fence before each flip to live waits 65 s)"
	@$(CURDIR)/bin/rehearse -workers $(CURDIR)/workers -dir $(CURDIR)/.rehearse $(REHEARSE_FLAGS)

# The figures of the guide's end state and open questions: a bot call
# (getJSON + putJSON) timed in workerd in each configuration, MongoDB and
# the proxy 20 ms away behind TCP delay links (about five minutes).
BOT_BENCH_CALLS ?= 200
bot-bench: workers-deps
	@cd tests && $(GO) build -o $(CURDIR)/bin/rehearse ./rehearse
	@$(CURDIR)/bin/rehearse -workers $(CURDIR)/workers -dir $(CURDIR)/.rehearse/bench -bench $(BOT_BENCH_CALLS)

# The guide's local tee check (step 5): your Worker (BOT=its folder) with
# the tee in wrangler dev, the bridge in a second wrangler dev over the same
# local KV data, kvshadow-proxy at the bridge, the embedded MongoDB-compatible
# server; Ctrl-C gives the verdict. TEE_CHECK_FLAGS: -config, -binding,
# -kv-id, -port, -stage (dualwrite, shadow, handover, live), -fence, -var NAME:VALUE.
tee-check: workers-deps
	@[ -n "$(BOT)" ] || { echo "make tee-check: BOT=path/to/your/worker is required"; exit 2; }
	@cd tests && $(GO) build -o $(CURDIR)/bin/tee-check ./teecheck
	@$(CURDIR)/bin/tee-check -bot "$(abspath $(BOT))" -workers $(CURDIR)/workers $(TEE_CHECK_FLAGS)

# The embedded MongoDB-compatible server alone, for experiments: prints its
# URI and serves until Ctrl-C.
mongo:
	@echo "make mongo: building (the first time takes a few minutes)"
	@cd demo && $(GO) build -o $(DEMO_BIN)/embedded-mongo ./cmd/embedded-mongo
	@$(DEMO_BIN)/embedded-mongo -dir $(CURDIR)/.demo/embedded-mongo

# Each step says what it runs as it runs; the Go tests go through
# scripts/testlog, which names each package and slow test as it ends, the
# tests still running every 30 s, and a failed test's whole output.
TESTLOG := $(CURDIR)/bin/testlog
# Tests that skip under the race detector (values of tens of MiB through
# FerretDB): make integration runs them once without it.
LARGE_TESTS := ^(TestLargeValuesSettleThroughTheProxy|TestLargeCopyToASlowShadow|TestGetManyPastOneReply)$$
# Each step is a make of its own, so that its time is said as it ends.
TEST_STEPS := lint unit workers integration alerts deploy fuzz
test:
	@t0=$$(date +%s); for s in $(TEST_STEPS); do t=$$(date +%s); $(MAKE) --no-print-directory $$s || exit 1; \
	echo "make test: $$s took $$(( $$(date +%s) - t )) s"; done; echo "make test: every step passed in $$(( $$(date +%s) - t0 )) s"

testlog:
	@$(GO) build -o $(TESTLOG) ./scripts/testlog

lint: fmt-check vet staticcheck

fmt-check:
	@echo "make test: lint: gofmt, go vet and staticcheck over the modules $(MODULES) (a few minutes the first time)"
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@for m in $(MODULES); do [ -f $$m/go.mod ] || continue; (cd $$m && $(GO) vet ./...) || exit 1; done

staticcheck:
	@for m in $(MODULES); do [ -f $$m/go.mod ] || continue; (cd $$m && $(STATICCHECK) ./...) || exit 1; done

# The longest packages first.
unit: testlog
	@echo "make test: unit tests of the library module, with the race detector (a few minutes)"
	@set -o pipefail; $(GO) test -race -count=1 -json ./service/ ./kvapi/ ./dualwrite/ ./... | $(TESTLOG)

# The JavaScript package for Workers (binding, tee, bridge Worker), tested
# with Node's runner and inside workerd through miniflare; the Go tests in
# tests/workers need its node_modules.
workers:
	@echo "make test: the JavaScript package (npm ci, then Node's test runner and miniflare)"
	cd workers && npm ci --no-audit --no-fund && npm test

# Three packages at a time, the longest first: most of their time is spent
# waiting (expiries, intervals, other processes), not computing.
LONG_TESTS := ./workers/ ./settle/ ./botkv/ ./teecheck/ ./proxy/ ./rehearse/
# The race detector watches the tests and kvshadow's code, not FerretDB's: the
# tests reach the embedded server built without it, in a process of its own, by
# MONGODB_URI as they would a real MongoDB (under the detector FerretDB's SQLite
# made every MongoDB call about ten times slower). Tests that stop and restart
# a server of their own still embed one, and so do those that use the bot's
# fixed database miti99bot (the help examples, tee-check, the rehearsal, whose
# step 14 drops collections there). With MONGODB_URI set, the tests run
# against that MongoDB, as every test does, and make starts no server of its own.
integration: workers-deps nodeinterop-deps wrangler-deps testlog
	@echo "make test: integration tests: the tests module against the REST API server, embedded FerretDB and headless Chromium (about 5 minutes)"
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ -n "$$CI$$KVSHADOW_REQUIRE_BROWSER" ]; then echo "make test: chromium or chromedriver is missing and CI is set: the HTML report's layout test fails (apt-get install chromium chromium-driver)"; \
	  else echo "make test: chromium or chromedriver is missing: the HTML report's layout test is SKIPPED here (CI fails it instead; apt-get install chromium chromium-driver)"; fi; \
	fi
	@if [ -f tests/go.mod ]; then set -o pipefail; uri=$$MONGODB_URI; \
	if [ -n "$$uri" ]; then echo "make test: against the MongoDB of MONGODB_URI (no embedded server started)"; else \
	(cd demo && $(GO) build -o $(DEMO_BIN)/embedded-mongo ./cmd/embedded-mongo) || exit 1; \
	d=$$(mktemp -d); $(DEMO_BIN)/embedded-mongo -dir $$d/data >$$d/out 2>&1 & pid=$$!; \
	trap 'kill $$pid; wait $$pid; rm -rf $$d' EXIT; until uri=$$(sed -n 's/^export MONGODB_URI=//p' $$d/out); [ -n "$$uri" ]; do \
	  kill -0 $$pid 2>/dev/null || { cat $$d/out; exit 1; }; sleep 0.1; done; fi; \
	cd tests && MONGODB_URI=$$uri $(GO) test -race -count=1 -timeout 30m -p 3 -json $(LONG_TESTS) ./... | $(TESTLOG); fi
	@echo "make test: the large-value tests, which the race detector makes too slow for FerretDB (tens of MiB), once without it (about a minute)"
	@set -o pipefail; cd tests && $(GO) test -count=1 -timeout 15m -json -run '$(LARGE_TESTS)' ./proxy/ ./mongokv/ | $(TESTLOG)
	@echo "make test: the benchmarks of docs/performance.md once, short (their figures are reported, never asserted: about two minutes)"
	@set -o pipefail; cd tests && $(GO) test -run '^$$' -bench '^BenchmarkProxy(Latency|Saturation)$$' -benchtime 20x ./proxy/ | grep -E '^(Benchmark|ok|FAIL|PASS)'
	@set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkSpacedCall$$' -benchtime 20x ./backends/cfkv/ | grep -E '^(Benchmark|ok|FAIL|PASS)'
	@cd workers && KVSHADOW_BENCH_UPDATES=30 npm run --silent bench | grep -E '^(Benchmark|ratio)'
	@echo "make test: the demo, shortened, as a test (about a minute)"
	@set -o pipefail; cd demo && $(GO) test -race -count=1 -timeout 10m -json ./... | $(TESTLOG)

# The JavaScript package as a bot team adds it: bin/kvshadow-workers-<version>.tgz,
# installed with `npm install ./kvshadow-workers-<version>.tgz` (workers/README.md).
workers-pack:
	@mkdir -p bin
	@cd workers && npm pack --pack-destination $(CURDIR)/bin
	@f=$$(cd bin && ls -t kvshadow-workers-*.tgz | head -1); echo "make workers-pack: bin/$$f; copy it into the bot's Worker project and run there: npm install ./$$f (package.json records the path, which must hold on every machine that installs the bot)"

workers-deps:
	@[ -d workers/node_modules/miniflare ] && [ -d workers/node_modules/mongodb ] || (cd workers && npm ci --no-audit --no-fund)

# wrangler, pinned, which tests/wrangler runs against the proxy.
wrangler-deps:
	@[ -x tests/wrangler/node_modules/.bin/wrangler ] || (cd tests/wrangler && npm ci --no-audit --no-fund)

# The Node.js mongodb driver that tests/nodeinterop runs the bot's store on.
nodeinterop-deps:
	@[ -d tests/nodeinterop/node_modules/mongodb ] || (cd tests/nodeinterop && npm ci --no-audit --no-fund)

# The Prometheus alert rules: promtool's syntax check and its unit tests
# (firing and not firing series for every alert). promtool is Debian's
# prometheus package, which scripts/need.sh installs where it is missing.
ALERTS := deploy/prometheus
alerts:
	@echo "make test: alert rules: promtool check rules and promtool test rules ($(ALERTS))"
	@scripts/need.sh promtool:prometheus; rc=$$?; \
	if [ $$rc = 3 ] && [ "$${KVSHADOW_REQUIRE_DEPLOY_TOOLS:-}" != 1 ]; then echo "make test: alert rules: SKIPPED: promtool cannot be installed here"; exit 0; fi; \
	[ $$rc = 0 ] || exit $$rc; \
	cd $(ALERTS) && promtool check rules kvshadow-alerts.yml && promtool test rules kvshadow-alerts.test.yml

# The container image, FROM scratch (deploy/image/Containerfile): the three
# commands built static (CGO off) with their CA roots and time zones, run as
# user 65532, the journal directory a volume, OCI labels with the version.
# Built with Debian's buildah (scripts/need.sh installs it) into the storage
# podman itself uses, whatever driver made it (buildah is given the driver
# podman reports; podman none: it refuses one its store was not made with), so that
# `podman run localhost/kvshadow:<version>` finds it there, as the runbook's
# Deploy section runs it; Docker loads it with `podman save ... | docker load`,
# Kubernetes pulls it from a registry it was pushed to (`podman push`).
# IMAGE_OCI=DIR also writes it as an OCI layout there (podman save), which is
# how deploy/image_test.go runs it.
IMAGE ?= localhost/kvshadow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# Read once: a tree that changes while the image builds keeps one name.
VERSION := $(VERSION)
REVISION := $(REVISION)
IMAGE_CTX := $(CURDIR)/.image
# STORAGE=--storage-driver D (or --root/--runroot) is given to buildah and
# podman as it is; empty asks podman (once need.sh has installed it).
STORAGE ?=
IMAGE_OCI ?=
image:
	@scripts/need.sh buildah:buildah podman:podman
	@echo "make image: building $(IMAGE):$(VERSION) (static binaries, then buildah; a few minutes the first time)"
	@rm -rf $(IMAGE_CTX) && mkdir -p $(IMAGE_CTX)/rootfs/usr/local/bin $(IMAGE_CTX)/rootfs/etc $(IMAGE_CTX)/journal
	@CGO_ENABLED=0 $(GO) build -trimpath -tags image -ldflags "-s -w" -o $(IMAGE_CTX)/rootfs/usr/local/bin/ ./cmd/kvshadow-proxy ./cmd/shadow-report ./cmd/kv-emulator
	@printf 'root:x:0:0:root:/:/sbin/nologin\nkvshadow:x:65532:65532:kvshadow:/var/lib/kvshadow:/sbin/nologin\n' > $(IMAGE_CTX)/rootfs/etc/passwd
	@printf 'root:x:0:\nkvshadow:x:65532:\n' > $(IMAGE_CTX)/rootfs/etc/group
	@storage='$(STORAGE)'; [ -n "$$storage" ] || storage="--storage-driver $$(podman info --format '{{.Store.GraphDriverName}}')" || exit 1; \
	buildah $$storage build --quiet --layers=false -f deploy/image/Containerfile \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE):$(VERSION) $(IMAGE_CTX) >/dev/null && \
	echo "make image: built $(IMAGE):$(VERSION), in podman's storage: podman run $(IMAGE):$(VERSION) --help;" \
		"Docker: podman save $(IMAGE):$(VERSION) | docker load; Kubernetes: podman push $(IMAGE):$(VERSION) <registry>/kvshadow:$(VERSION)" && \
	if [ -n "$(IMAGE_OCI)" ]; then rm -rf $(IMAGE_OCI) && podman $(STORAGE) save --quiet --format oci-dir -o $(IMAGE_OCI) $(IMAGE):$(VERSION) && echo "make image: saved as an OCI layout in $(IMAGE_OCI)"; fi

# The deployment forms (deploy/): Kubernetes manifests decoded strictly and
# rendered with the kustomize API, the systemd unit (systemd-analyze verify),
# the compose file, the alert rules' runbook links, and the container image
# built and run from its own root filesystem.
deploy: testlog
	@echo "make test: deployment forms: Kubernetes, systemd, compose, the image (a few minutes)"
	@set -o pipefail; cd deploy && $(GO) test -count=1 -timeout 20m -json ./... | $(TESTLOG)

fuzz:
	@echo "make test: a short fuzz pass over every fuzz target ($(FUZZTIME) executions each, a few minutes)"
	@FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# make bench records the proxy's, the composite's and the settle set's
# figures: each benchmark BENCHCOUNT times (6: benchstat needs 6 for an interval), then min/median/max
# of every metric (scripts/benchsum, with what the composite adds over the
# store it wraps, run by run) and benchstat's medians with their confidence
# intervals. The raw runs are kept in .bench/. make bench-all runs every
# benchmark of every module once, and the JavaScript package's.
BENCHCOUNT ?= 6
PROXY_BENCHTIME ?= 2000x
BENCHDIR := $(CURDIR)/.bench
BENCHSUM := $(CURDIR)/bin/benchsum
BENCHSTAT := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
bench: workers-deps
	@mkdir -p $(BENCHDIR) && $(GO) build -o $(BENCHSUM) ./scripts/benchsum
	@echo "make bench: the proxy against direct calls, the forwarder, the SDK forwarder and the floor, at 0, 3 and 20 ms ($(BENCHCOUNT) runs of $(PROXY_BENCHTIME)), then saturated"
	@set -o pipefail; cd tests && $(GO) test -run '^$$' -bench '^BenchmarkProxy(Latency|Saturation)$$' -benchtime $(PROXY_BENCHTIME) -count $(BENCHCOUNT) ./proxy/ | tee $(BENCHDIR)/proxy.txt
	@echo "make bench: what cloudflare-go costs a call beside a bare net/http request and beside cfkv, calls back to back and 3 ms apart"
	@set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkSpacedCall$$' -benchtime $(PROXY_BENCHTIME) -count $(BENCHCOUNT) ./backends/cfkv/ | tee $(BENCHDIR)/sdk.txt
	@echo "make bench: the bot's call in workerd through the tee, on its bare binding and with its own dual write, MongoDB 20 and 200 ms away ($(BENCHCOUNT) runs)"
	@set -o pipefail; for i in $$(seq $(BENCHCOUNT)); do (cd workers && npm run --silent bench) || exit 1; done | tee $(BENCHDIR)/workerd.txt
	@echo "make bench: the composite against the memory store alone (-cpu 1, so that the copies' work is counted)"
	@set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkOverhead$$' -benchmem -cpu 1 -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./dualwrite/ | tee $(BENCHDIR)/composite.txt
	@echo "make bench: the settle set at 1k to 1M keys, in memory and in the journal"
	@set -o pipefail; $(GO) test -run '^$$' -bench '^BenchmarkSettleSet' -benchmem -count $(BENCHCOUNT) ./dualwrite/ ./journal/ | tee $(BENCHDIR)/settle.txt
	@echo "make bench: min/median/max over $(BENCHCOUNT) runs"
	@$(BENCHSUM) -diff dualwrite.Overhead/Put/dualwrite=dualwrite.Overhead/Put/memory \
		-diff dualwrite.Overhead/Get/dualwrite-shadow-rate0=dualwrite.Overhead/Get/memory \
		$(BENCHDIR)/proxy.txt $(BENCHDIR)/sdk.txt $(BENCHDIR)/workerd.txt $(BENCHDIR)/composite.txt $(BENCHDIR)/settle.txt | tee $(BENCHDIR)/summary.txt
	@echo "make bench: benchstat (medians, 95% confidence intervals)"
	@for f in proxy sdk composite settle; do $(BENCHSTAT) $(BENCHDIR)/$$f.txt || exit 1; done

bench-all: workers-deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	@if [ -f tests/go.mod ]; then cd tests && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...; fi
	cd workers && npm run bench
