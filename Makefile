GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PKGS        := ./...
# FUZZTIME is a count of inputs, not a duration: with a duration, Go 1.26's
# fuzz coordinator can report its own deadline as a failure ("context
# deadline exceeded", no failing input; golang/go#75804) on a busy machine.
FUZZTIME    ?= 50000x
# package:target pairs that `make test` fuzzes for FUZZTIME each after the
# unit tests; their seed corpora live in each package's testdata/fuzz.
FUZZ        := ./adapters/http:FuzzDecodeJSON ./application/paging:FuzzCheckCursor \
               ./adapters/webhook:FuzzCheckTarget ./adapters/webhook:FuzzGuard \
               ./adapters/prober:FuzzParseAnswer \
               ./domain/browserdata:FuzzSanitize ./domain/browserdata:FuzzParseNetscape \
               ./domain/browserdata:FuzzCleanPreferences

# The version and commit the binary reports (profilesvc version, the start
# line, profilesvc_build_info), from the checkout; dev/unknown outside one.
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X main.version=$(VERSION) -X main.commitID=$(COMMIT)

.PHONY: run test fuzz lint migrate bench bench-go build docs-bundle

## run: the service on its embedded default (SQLite and keys in ./data), no setup
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/profilesvc serve

## test: every suite with the race detector; the PostgreSQL and Redis suites
## run when TEST_DATABASE_URL / TEST_REDIS_URL are set; then a short fuzz run
test:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	$(MAKE) fuzz

## fuzz: each fuzz target for FUZZTIME inputs (make fuzz FUZZTIME=5000000x for longer)
fuzz:
	@set -e; for t in $(FUZZ); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# Redocly CLI and Spectral (pinned in tests/openapilint/package-lock.json)
# lint the OpenAPI document with the rules of tests/openapilint/redocly.yaml
# and tests/openapilint/.spectral.yaml; a warning of either fails the lint.
# Neither reports usage (telemetry, update checks, install analytics).
OPENAPILINT_DIR := tests/openapilint
OPENAPI         := adapters/http/openapi.yaml

## lint: gofmt, go vet, the build for macOS and go vet for Windows (where
## sessions are leases only), staticcheck, then Redocly's and Spectral's
## OpenAPI and OWASP rules on openapi.yaml (needs Node.js 20.19 or later;
## skipped without npm unless CI is set)
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) build $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	@if ! command -v npm >/dev/null 2>&1 || ! command -v npx >/dev/null 2>&1; then \
		echo "lint: Redocly and Spectral need Node.js 20.19 or later with npm and npx (https://nodejs.org, or apt-get install nodejs npm)"; \
		if [ -n "$$CI" ]; then exit 1; fi; \
		echo "lint: skipping the OpenAPI lint"; \
	else \
		set -e; \
		if [ ! -x $(OPENAPILINT_DIR)/node_modules/.bin/redocly ] || [ ! -x $(OPENAPILINT_DIR)/node_modules/.bin/spectral ]; then \
			SCARF_ANALYTICS=false npm ci --no-audit --no-fund --prefix $(OPENAPILINT_DIR); \
		fi; \
		cd $(OPENAPILINT_DIR); \
		echo "redocly lint $(OPENAPI)"; \
		REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx --no redocly lint --config redocly.yaml $(CURDIR)/$(OPENAPI); \
		echo "spectral lint $(OPENAPI)"; \
		npx --no spectral lint -r .spectral.yaml --fail-severity warn --display-only-failures $(CURDIR)/$(OPENAPI); \
	fi

## migrate: apply pending migrations of DATABASE_URL and exit
migrate:
	$(GO) run ./cmd/profilesvc migrate

# The side-by-side benchmark's stores: the test ones, else the local
# defaults; an unreachable one is skipped and the table says so.
BENCH_DATABASE_URL ?= $(or $(TEST_DATABASE_URL),postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
BENCH_REDIS_URL    ?= $(or $(TEST_REDIS_URL),redis://127.0.0.1:6379/0)
BENCH_ROUND        ?= 3s
BENCH_FLAGS        ?=

## bench: the service and its limit servers under the same load in one run,
## side by side (SQLite, PostgreSQL + Redis, webhooks, start, RSS); prints the
## table and writes tests/bench/RESULTS.md. BENCH_ROUND=1s for a quicker run,
## BENCH_FLAGS for more (go run ./tests/bench/sidebyside -h)
bench:
	$(GO) run ./tests/bench/sidebyside -go "$(GO)" -round $(BENCH_ROUND) \
		-database '$(BENCH_DATABASE_URL)' -redis '$(BENCH_REDIS_URL)' $(BENCH_FLAGS)

## bench-go: the in-process go benchmarks (whole fx app, no processes)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./tests/bench

# Redoc's standalone bundle, embedded in the binary to render /docs.
REDOC_VERSION := 2.5.4
REDOC_SHA256  := dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b

## docs-bundle: fetch Redoc's bundle from npm again, check its sha256, and
## put it where /docs embeds it (adapters/http/redoc)
docs-bundle:
	dir=$$(mktemp -d) && cd $$dir && npm pack redoc@$(REDOC_VERSION) --silent >/dev/null && \
		tar xzf redoc-$(REDOC_VERSION).tgz && \
		echo "$(REDOC_SHA256)  package/bundles/redoc.standalone.js" | sha256sum -c - && \
		cp package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt $(CURDIR)/adapters/http/redoc/ && \
		cp package/LICENSE $(CURDIR)/adapters/http/redoc/LICENSE && rm -rf $$dir

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/profilesvc ./cmd/profilesvc
