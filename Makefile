# kvshadow: `make test` is what CI runs; `make demo` is the main job.
SHELL := /bin/bash
GO ?= go
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 20000x
BENCHTIME ?= 1s
# The integration tests are their own module, so that FerretDB (the embedded
# MongoDB-compatible server) never reaches a library user's build.
MODULES := . tests demo

.PHONY: demo test lint fmt-check vet staticcheck unit integration fuzz bench

# The main job: the whole migration on embedded servers (see demo/doc.go).
DEMO_FLAGS ?=
demo:
	cd demo && $(GO) run . -dir $(CURDIR)/.demo $(DEMO_FLAGS)

test: lint unit integration fuzz

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@for m in $(MODULES); do [ -f $$m/go.mod ] || continue; (cd $$m && $(GO) vet ./...) || exit 1; done

staticcheck:
	@for m in $(MODULES); do [ -f $$m/go.mod ] || continue; (cd $$m && $(STATICCHECK) ./...) || exit 1; done

unit:
	$(GO) test -race -count=1 ./...

integration:
	@if [ -f tests/go.mod ]; then cd tests && $(GO) test -race -count=1 -timeout 30m ./...; fi
	cd demo && $(GO) test -race -count=1 -timeout 10m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	@if [ -f tests/go.mod ]; then cd tests && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...; fi
