#!/bin/bash
# Issue 15's measurement on a Temporal server over PostgreSQL, in one command: it creates the
# Temporal and shotflow databases, starts the server (deploy/temporal-postgres/run.sh, built on
# first use), a shotflow api and worker against it, runs `loadgen -mode both` (shotflow, then the
# bare baseline on the same frontend) with the CPU of every process, and drops the databases again.
# A benchmark, not part of make test. Usage (from anywhere):
#
#   deploy/bench/postgres.sh [SESSIONS [IMAGES [LOADGEN FLAGS...]]]   # default 40 sessions of 5 images
#
# Flags after IMAGES go to loadgen: -start-only measures acceptance and the bare starts alone
# (the worker is paused while sessions are accepted, the bare worker starts after the bare starts);
# -order-jobs 50 measures the jobs end to end on sessions of 50 one-image subjects, like the bare
# orders of 50 children, and -jobs N sets how many (issue 28: 2000 1 -start-only -bare-starts 1000
# -order-jobs 50 -jobs 1000 -rounds 5).
#
# Output: the loadgen summary, also kept in $OUT (default .data/bench/postgres.txt). PROFILE=N
# also keeps CPU profiles of the api and the worker over the run's first N seconds
# (.data/bench/api.pprof, worker.pprof; read them with go tool pprof). Needs PostgreSQL on
# 127.0.0.1:5432 (user postgres, trust) and the ports 17233–17239, 18080–18083.
set -u
cd "$(dirname "$0")/../.."
make --no-print-directory build temporal-cli >/dev/null
go build -o bin/loadgen ./cmd/loadgen || exit 1
ORDERS=${1:-40}; IMAGES=${2:-5}; shift $(($# < 2 ? $# : 2))
LOGS=.data/bench; mkdir -p "$LOGS"
export PGOPTIONS="-c client_min_messages=warning"
export TEMPORAL_SERVER_DIR="$PWD/bin/temporal-server" TEMPORAL_PORT_OFFSET=10000 TEMPORAL_DATABASE=temporal_bench
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS temporal_bench" -c "DROP DATABASE IF EXISTS temporal_bench_visibility" -c "DROP DATABASE IF EXISTS shotflow_bench" >/dev/null
# PostgreSQL vacuums and analyzes the databases as a deployment's does. A machine whose
# configuration turns autovacuum off (this CI image's conf.d does, to spare its tests) would run
# the rounds on tables that are never vacuumed nor analyzed: shotflow's read model, whose rows
# every job updates, slows down round after round, and so does Temporal's. Autovacuum is turned
# on for the run (ALTER SYSTEM, a reload) and reset at the end.
if [ "$(psql -h 127.0.0.1 -U postgres -Atc 'SHOW autovacuum')" != on ]; then
  psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" >/dev/null
  trap 'psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null' EXIT
  sleep 1
fi
deploy/temporal-postgres/run.sh build >$LOGS/build.log 2>&1 || { echo build failed; exit 1; }
deploy/temporal-postgres/run.sh schema >$LOGS/schema.log 2>&1 || { echo schema failed; tail $LOGS/schema.log; exit 1; }
deploy/temporal-postgres/run.sh config >$LOGS/config.log 2>&1 || { echo config failed; exit 1; }
deploy/temporal-postgres/run.sh start >$LOGS/server.log 2>&1 &
sleep 1
SERVER=$(pgrep -f "$TEMPORAL_SERVER_DIR/server" | head -1)
for i in $(seq 1 60); do bin/temporal operator cluster health --address 127.0.0.1:17233 >/dev/null 2>&1 && break; sleep 1; done
deploy/temporal-postgres/run.sh setup >$LOGS/setup.log 2>&1 || { echo setup failed; tail $LOGS/setup.log; }
# The api, the worker and loadgen's bare client alike: uncompressed calls to the server on
# loopback (TEMPORAL_GRPC_COMPRESSION=gzip measures the SDK's default).
export TEMPORAL_GRPC_COMPRESSION=${TEMPORAL_GRPC_COMPRESSION:-none}
export TEMPORAL_ADDRESS=127.0.0.1:17233 DATABASE_URL="postgres://postgres@127.0.0.1:5432/shotflow_bench?sslmode=disable"
DD=$(mktemp -d); export SECRET_KEY=$(head -c32 /dev/urandom | base64) DATA_DIR=$DD BLOB_URL=file://$DD/blobs RENDER_LONG_EDGE=64 ORDER_MAX_CONCURRENT_JOBS=50
export PUBLIC_BASE_URL=http://127.0.0.1:18080 HTTP_ADDR=127.0.0.1:18080 WORKER_METRICS_ADDR=127.0.0.1:18081 PROVIDER_CONCURRENCY=local=16
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE shotflow_bench" >/dev/null
bin/shotflow migrate >$LOGS/migrate.log 2>&1 || { echo migrate failed; tail $LOGS/migrate.log; }
ACCOUNT=$(bin/shotflow admin account create --name Bench --credits 100000000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("id") or d.get("account_id") or d)')
INST=$(bin/shotflow admin installation create --account "$ACCOUNT" --name Bench --rate-limit 100000)
KEY=$(echo "$INST" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("api_key") or d.get("key") or d)')
PPROF_ADDR=127.0.0.1:18082 bin/shotflow api >$LOGS/api.log 2>&1 &
API=$!
PPROF_ADDR=127.0.0.1:18083 bin/shotflow worker >$LOGS/worker.log 2>&1 &
WORKER=$!
for i in $(seq 1 60); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 1; done
sleep 3
if [ -n "${PROFILE:-}" ]; then # CPU profiles of the api and the worker over the first $PROFILE seconds
  curl -s -o $LOGS/api.pprof "http://127.0.0.1:18082/debug/pprof/profile?seconds=$PROFILE" &
  curl -s -o $LOGS/worker.pprof "http://127.0.0.1:18083/debug/pprof/profile?seconds=$PROFILE" &
fi
echo "postgres: $(psql -h 127.0.0.1 -U postgres -Atc "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('autovacuum', 'shared_buffers', 'synchronous_commit', 'fsync', 'max_connections')")" | tee "${OUT:-$LOGS/postgres.txt}"
POSTMASTER=$(head -1 "$(psql -h 127.0.0.1 -U postgres -Atc 'show data_directory')/postmaster.pid")
bin/loadgen -mode both -base http://127.0.0.1:18080 -key "$KEY" -temporal 127.0.0.1:17233 \
  -orders "$ORDERS" -products 1 -images "$IMAGES" -concurrency 8 \
  -pids temporal=$SERVER,postgres=$POSTMASTER,worker=$WORKER,api=$API "$@" 2>&1 | tee -a "${OUT:-$LOGS/postgres.txt}"
kill $API $WORKER 2>/dev/null; sleep 1
kill $SERVER 2>/dev/null; pkill -f "$TEMPORAL_SERVER_DIR/server"; sleep 2
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS temporal_bench" -c "DROP DATABASE IF EXISTS temporal_bench_visibility" -c "DROP DATABASE IF EXISTS shotflow_bench" >/dev/null 2>&1
rm -rf "$DD"
