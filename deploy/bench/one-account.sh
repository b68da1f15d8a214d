#!/bin/bash
# The hot-row question through the real API (issue 28; docs/scaling.md, "One account's row"): one
# key, so every session reserves on one account's row in PostgreSQL, accepted with 1, 8 and 32
# concurrent clients. It starts `shotflow dev` on spare ports with shotflow's database on the
# PostgreSQL server of TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432), creates a
# rate-unlimited installation, runs `loadgen` once per client count, and drops what it created.
# A benchmark, not part of make test. Usage (from anywhere):
#
#   deploy/bench/one-account.sh [SESSIONS [CLIENTS...]]   # default 400 sessions; 1 8 32 clients
#
# Sessions are of one image, as the models benchmarks' orders (BenchmarkOneAccount). Output: each
# loadgen summary, also kept in $OUT (default .data/bench/one-account.txt).
set -u
cd "$(dirname "$0")/../.."
make --no-print-directory build temporal-cli >/dev/null || exit 1
go build -o bin/loadgen ./cmd/loadgen || exit 1
SESSIONS=${1:-400}; shift || true
CLIENTS=${*:-1 8 32}
LOGS=.data/bench; mkdir -p "$LOGS"; OUT=${OUT:-$LOGS/one-account.txt}; : >"$OUT"
ADMIN=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=shotflow_one_account_$$
DBURL=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(u.urlunparse(p._replace(path="/"+sys.argv[2])))' "$ADMIN" "$DB")
export PGOPTIONS="-c client_min_messages=warning"
psql "$ADMIN" -qc "CREATE DATABASE $DB" || exit 1
DD=$(mktemp -d)
DEV=
cleanup() {
  [ -n "$DEV" ] && kill "$DEV" 2>/dev/null && wait "$DEV" 2>/dev/null
  psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
  rm -rf "$DD"
}
trap cleanup EXIT
export TEMPORAL_GRPC_COMPRESSION=${TEMPORAL_GRPC_COMPRESSION:-none}
export DATA_DIR=$DD DATABASE_URL=$DBURL BLOB_URL=file://$DD/blobs HTTP_ADDR=127.0.0.1:29080 PUBLIC_BASE_URL=http://127.0.0.1:29080 \
  DEV_TEMPORAL_PORT=29233 DEV_TEMPORAL_UI_PORT=29234 WORKER_METRICS_ADDR=127.0.0.1:29081 RENDER_LONG_EDGE=64 \
  ORDER_MAX_CONCURRENT_JOBS=50 PROVIDER_CONCURRENCY=local=16 DATABASE_MAX_OPEN_CONNS=40
bin/shotflow dev >"$LOGS/one-account-dev.log" 2>&1 &
DEV=$!
for _ in $(seq 1 90); do curl -sf http://127.0.0.1:29080/readyz >/dev/null && break; sleep 1; done
curl -sf http://127.0.0.1:29080/readyz >/dev/null || { echo "shotflow dev did not become ready: $LOGS/one-account-dev.log"; exit 1; }
ACCOUNT=$(bin/shotflow admin account create --name OneAccount --credits 100000000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("id") or d.get("account_id"))')
KEY=$(bin/shotflow admin installation create --account "$ACCOUNT" --name OneAccount --rate-limit 100000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("api_key") or d.get("key"))')
for c in $CLIENTS; do
  echo "== $SESSIONS sessions of 1 image, one key, $c clients ($(uptime))" | tee -a "$OUT"
  bin/loadgen -base http://127.0.0.1:29080 -key "$KEY" -temporal 127.0.0.1:29233 -history=false \
    -orders "$SESSIONS" -products 1 -images 1 -concurrency "$c" 2>&1 | tee -a "$OUT"
done
