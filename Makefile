# shotflow — `make run` starts everything locally; `make test` runs every test.
SHELL := /bin/bash
export GOTOOLCHAIN := local

GO            ?= go
BIN           := $(CURDIR)/bin
TEMPORAL_CLI  := $(BIN)/temporal
TEMPORAL_CLI_VERSION := v1.5.1
# A real S3-compatible server for the tests (internal/testsupport/s3server): versitygw, posix backend.
VERSITYGW      := $(BIN)/versitygw
VERSITYGW_VERSION := v1.8.0
PKGS          := ./...
# FUZZTIME is an execution count, not a duration: with a duration Go 1.26's fuzz coordinator may
# report its own deadline as a failure ("context deadline exceeded", no failing input) when a
# worker is busy at the end (golang/go#75804, fixed in Go 1.27). A count has no deadline to race;
# 4000 executions take about 20 s on two cores.
FUZZTIME      ?= 4000x

# Checkers, each pinned and installed under bin/ on first use (make check).
STATICCHECK_VERSION   := v0.8.2
WORKFLOWCHECK_VERSION := v0.6.0
REDOCLY_VERSION       := 2.77.0
DCLINT_VERSION        := 3.1.0
GO_TOOLS   := $(BIN)/go-tools
STATICCHECK   := $(GO_TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
WORKFLOWCHECK := $(GO_TOOLS)/workflowcheck-$(WORKFLOWCHECK_VERSION)/workflowcheck
NODE_TOOLS := $(BIN)/node-tools/redocly-$(REDOCLY_VERSION)-dclint-$(DCLINT_VERSION)
REDOCLY    := $(NODE_TOOLS)/node_modules/.bin/redocly
DCLINT     := $(NODE_TOOLS)/node_modules/.bin/dclint

.PHONY: run build test test-short fuzz check lint staticcheck workflowcheck openapi-lint compose-lint fmt tidy clean temporal-cli versitygw node

## run: build, then start the Temporal dev server, API and worker on embedded defaults
run: build $(TEMPORAL_CLI) ffmpeg
	$(BIN)/shotflow dev

## build: compile bin/shotflow
build:
	$(GO) build -o $(BIN)/shotflow ./cmd/shotflow

## temporal-cli: install the Temporal CLI (dev server and Web UI) into bin/
temporal-cli: $(TEMPORAL_CLI)
$(TEMPORAL_CLI):
	@echo "Installing the Temporal CLI $(TEMPORAL_CLI_VERSION) into bin/ (first time only; takes a few minutes)…"
	GOBIN=$(BIN) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

## versitygw: install the S3-compatible server the tests run the blob store against into bin/
## (first time only; about 1.5 minutes). `make run` never needs it.
versitygw: $(VERSITYGW)
$(VERSITYGW):
	@echo "Installing versitygw $(VERSITYGW_VERSION) into bin/ (first time only; takes a minute or two)…"
	GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

## ffmpeg: install ffmpeg with apt-get when it is not on PATH (videos are encoded with it;
## without it internal/media/video falls back to a larger pure-Go encoder). Never fails the build.
.PHONY: ffmpeg
ffmpeg:
	@if command -v ffmpeg >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo -n"; fi; \
	echo "Installing ffmpeg with apt-get (first time only)…"; \
	if command -v apt-get >/dev/null 2>&1 \
		&& $$sudo apt-get update -qq >/dev/null \
		&& $$sudo env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null \
		&& command -v ffmpeg >/dev/null 2>&1; then \
		echo "ffmpeg installed."; \
	else \
		echo "WARNING: could not install ffmpeg; videos will use the pure-Go encoder (larger files)," \
			"and the video decoder tests fail unless SHOTFLOW_SKIP_FFMPEG_TESTS=1." >&2; \
	fi

## test: every test (needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379), then `make fuzz`
test: $(TEMPORAL_CLI) $(VERSITYGW) ffmpeg
	SHOTFLOW_REQUIRE_S3=1 $(GO) test -count=1 -timeout 15m $(PKGS)
	$(MAKE) --no-print-directory fuzz

## fuzz: fuzz both APIs for FUZZTIME each (4000 executions; no 5xx on any route, on PostgreSQL). Their seed
## corpora also run in every `go test`; a failing input is saved under testdata/fuzz/.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPluginAPI$$' -fuzztime $(FUZZTIME) ./api/plugin
	$(GO) test -run '^$$' -fuzz '^FuzzExternalAPI$$' -fuzztime $(FUZZTIME) ./api/external

## test-short: the tests without the long end-to-end runs and the process crash, restart, outage and
## concurrent-migration tests (go test -short). Go's test cache is kept, so a run after a small
## change re-runs only the packages it touches (seconds); a cold run takes about a minute on two
## cores, most of it linking the test binaries. vet is left to `make check`.
test-short: $(TEMPORAL_CLI) $(VERSITYGW)
	$(GO) test -short -vet=off -timeout 5m $(PKGS)

## check: every static check CI runs: gofmt, go vet, a tidy go.mod, staticcheck, workflowcheck, the OpenAPI
## documents (Redocly, 0 warnings) and docker-compose.yml (Compose schema and dclint rules)
check: lint tidy staticcheck workflowcheck openapi-lint compose-lint

## lint: gofmt check and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## staticcheck: staticcheck over every package
staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

## workflowcheck: Temporal's determinism check of the workflow code
workflowcheck: $(WORKFLOWCHECK)
	$(WORKFLOWCHECK) ./workflows/...

## openapi-lint: both OpenAPI documents with Redocly's recommended rules (redocly.yaml), no error
## and no warning allowed (`make test` also validates them, with kin-openapi, in internal/testsupport/contract)
openapi-lint: $(REDOCLY)
	@for doc in api/openapi.yaml api/external/openapi.yaml; do \
		$(REDOCLY) lint --format=json $$doc 2>/dev/null \
		| node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const t=JSON.parse(s).totals;console.log(process.argv[1]+":",JSON.stringify(t));process.exit(t.errors+t.warnings>0?1:0)})' $$doc \
		|| { $(REDOCLY) lint $$doc; exit 1; }; \
	done

## compose-lint: docker-compose.yml against the Compose schema and dclint's rules (.dclintrc.yaml),
## no warning allowed
compose-lint: $(DCLINT)
	$(DCLINT) --max-warnings 0 -c .dclintrc.yaml docker-compose.yml

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(WORKFLOWCHECK):
	GOBIN=$(dir $@) $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

$(REDOCLY) $(DCLINT): | node
	npm install --no-save --no-audit --no-fund --loglevel=error --prefix $(NODE_TOOLS) \
		@redocly/cli@$(REDOCLY_VERSION) dclint@$(DCLINT_VERSION)

## node: install Node.js and npm with apt-get when they are not on PATH (for the two npm checkers)
node:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo -n"; fi; \
	echo "Installing Node.js with apt-get (first time only)…"; \
	$$sudo apt-get update -qq >/dev/null && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null

## tidy: go mod tidy, then fail if go.mod or go.sum changed (CI keeps them tidy)
tidy:
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go.mod/go.sum were not tidy: commit the change above"; exit 1; }

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)/shotflow
