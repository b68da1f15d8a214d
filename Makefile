# shotflow — `make run` starts everything locally; `make test` runs every test.
SHELL := /bin/bash
export GOTOOLCHAIN := local

GO            ?= go
BIN           := $(CURDIR)/bin
TEMPORAL_CLI  := $(BIN)/temporal
TEMPORAL_CLI_VERSION := v1.5.1
PKGS          := ./...
FUZZTIME      ?= 20s

.PHONY: run build test test-short fuzz lint fmt tidy clean temporal-cli openapi-lint

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

## ffmpeg: install ffmpeg with apt-get when it is not on PATH (videos are encoded with it;
## without it internal/video falls back to a larger pure-Go encoder). Never fails the build.
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
test: $(TEMPORAL_CLI) ffmpeg
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(MAKE) --no-print-directory fuzz

## fuzz: fuzz both APIs for FUZZTIME each (20s; no 5xx on any route, on PostgreSQL). Their seed
## corpora also run in every `go test`; a failing input is saved under testdata/fuzz/.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPluginAPI$$' -fuzztime $(FUZZTIME) ./api/plugin
	$(GO) test -run '^$$' -fuzz '^FuzzExternalAPI$$' -fuzztime $(FUZZTIME) ./api/external

## lint: gofmt check and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## openapi-lint: lint api/openapi.yaml with Redocly's recommended rules (needs Node.js and the npm
## registry; `make test` also validates the document, with kin-openapi, in internal/contract)
openapi-lint:
	npx --yes @redocly/cli@latest lint api/openapi.yaml api/external/openapi.yaml

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)/shotflow
