#!/bin/bash
# Issue 15's measurement on the dev server (Temporal's SQLite file, `shotflow dev`), in one
# command: it starts shotflow dev on spare ports, creates a rate-unlimited installation, runs
# `loadgen -mode both` with the CPU of the Temporal dev server and of shotflow, and stops it.
# A benchmark, not part of make test. Usage (from anywhere):
#
#   deploy/bench/dev.sh [SESSIONS [IMAGES]]           # default 40 sessions of 5 images
#
# Output: the loadgen summary, also kept in $OUT (default .data/bench/dev.txt).
set -u
cd "$(dirname "$0")/../.."
make --no-print-directory build temporal-cli >/dev/null
go build -o bin/loadgen ./cmd/loadgen || exit 1
ORDERS=${1:-40}; IMAGES=${2:-5}
LOGS=.data/bench; mkdir -p "$LOGS"
export PGOPTIONS="-c client_min_messages=warning"
# shotflow dev and loadgen's bare client alike: uncompressed calls to the server on loopback.
export TEMPORAL_GRPC_COMPRESSION=${TEMPORAL_GRPC_COMPRESSION:-none}
DD=$(mktemp -d)
export DATA_DIR=$DD DATABASE_URL="sqlite://$DD/shotflow.db" BLOB_URL=file://$DD/blobs HTTP_ADDR=127.0.0.1:28080 PUBLIC_BASE_URL=http://127.0.0.1:28080 \
  DEV_TEMPORAL_PORT=27233 DEV_TEMPORAL_UI_PORT=28233 WORKER_METRICS_ADDR=127.0.0.1:28081 RENDER_LONG_EDGE=64 ORDER_MAX_CONCURRENT_JOBS=50 PROVIDER_CONCURRENCY=local=16
bin/shotflow dev >$LOGS/dev.log 2>&1 &
DEV=$!
for i in $(seq 1 90); do curl -sf http://127.0.0.1:28080/readyz >/dev/null && break; sleep 1; done
sleep 3
ACCOUNT=$(bin/shotflow admin account create --name Bench --credits 100000000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("id") or d.get("account_id") or d)')
KEY=$(bin/shotflow admin installation create --account "$ACCOUNT" --name Bench --rate-limit 100000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("api_key") or d.get("key") or d)')
TEMPORAL=$(pgrep -P "$DEV" temporal | head -1)
bin/loadgen -mode both -base http://127.0.0.1:28080 -key "$KEY" -temporal 127.0.0.1:27233 \
  -orders "$ORDERS" -products 1 -images "$IMAGES" -concurrency 8 -pids temporal=$TEMPORAL,worker=$DEV 2>&1 | tee "${OUT:-$LOGS/dev.txt}"
kill $DEV; sleep 3; rm -rf "$DD"
