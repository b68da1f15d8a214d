#!/bin/sh
# A Temporal server over PostgreSQL on this machine, for issue 15's measurement
# (docs/benchmarks.md, "How to measure issue 15's ratios"). A benchmark setup, not part of
# make test.
#
#   deploy/temporal-postgres/run.sh [all|build|schema|config|start|setup]
#
#   build   go install the server and its sql tool, pinned to $version, into $TEMPORAL_SERVER_DIR
#   schema  create the databases $TEMPORAL_DATABASE and ${TEMPORAL_DATABASE}_visibility and bring their schemas up to
#           date with the sql tool and the schema of the module (in the Go module cache)
#   config  write $TEMPORAL_SERVER_DIR/config/development-postgres12.yaml: the module's
#           config/development-postgres12.yaml with user $PGUSER, no password, those databases and every port
#           shifted by $TEMPORAL_PORT_OFFSET (membership ports stay below 32768)
#   start   run the server in the foreground
#   setup   on a running server: create the namespace and register shotflow's search attributes
#           (the list of docker-compose.yml) with deploy/temporal/setup.sh and bin/temporal
#   all     (the default) build, schema, config, start in the background, setup, then wait for
#           the server; Ctrl-C stops it. It prints the server's pid for loadgen -pids.
#
# Every step is idempotent. Environment: TEMPORAL_SERVER_DIR (default bin/temporal-server),
# PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres, trust authentication),
# TEMPORAL_DATABASE (temporal), TEMPORAL_PORT_OFFSET (0: frontend on 7233; 10000 puts it on
# 17233), TEMPORAL_NAMESPACE (default).
set -eu

version=v1.29.1
root=$(cd "$(dirname "$0")/../.." && pwd)
dir="${TEMPORAL_SERVER_DIR:-$root/bin/temporal-server}"
pg_host="${PGHOST:-127.0.0.1}"
pg_port="${PGPORT:-5432}"
pg_user="${PGUSER:-postgres}"
offset="${TEMPORAL_PORT_OFFSET:-0}"
namespace="${TEMPORAL_NAMESPACE:-default}"
db="${TEMPORAL_DATABASE:-temporal}"
frontend="127.0.0.1:$((7233 + offset))"
module="$(go env GOMODCACHE)/go.temporal.io/server@$version"

build() {
	mkdir -p "$dir"
	[ -x "$dir/server" ] || GOBIN="$dir" go install "go.temporal.io/server/cmd/server@$version"
	[ -x "$dir/sql" ] || GOBIN="$dir" go install "go.temporal.io/server/cmd/tools/sql@$version"
	echo "server and sql tool $version in $dir"
}

sql() {
	"$dir/sql" --plugin postgres12 --ep "$pg_host" -p "$pg_port" -u "$pg_user" "$@"
}

schema() {
	schema_dir="$module/schema/postgresql/v12"
	[ -d "$schema_dir" ] || { echo "no $schema_dir: run the build step first" >&2; exit 1; }
	sql --db "$db" create
	sql --db "$db" setup-schema -v 0.0
	sql --db "$db" update-schema -d "$schema_dir/temporal/versioned"
	sql --db "${db}_visibility" create
	sql --db "${db}_visibility" setup-schema -v 0.0
	sql --db "${db}_visibility" update-schema -d "$schema_dir/visibility/versioned"
	echo "databases $db and ${db}_visibility are up to date"
}

config() {
	if [ $((6939 + offset)) -ge 32768 ]; then
		echo "TEMPORAL_PORT_OFFSET=$offset puts the membership ports at or above 32768" >&2
		exit 1
	fi
	mkdir -p "$dir/config/dynamicconfig"
	cp "$module/config/dynamicconfig/development-sql.yaml" "$dir/config/dynamicconfig/"
	chmod u+w "$dir/config/dynamicconfig/development-sql.yaml"
	shift_ports=""
	for p in 6933 6934 6935 6939 7233 7234 7235 7239 7243 7936 8000; do
		shift_ports="$shift_ports -e s/\\b$p\\b/$((p + offset))/g"
	done
	# shellcheck disable=SC2086 # shift_ports is a list of sed arguments
	sed -e "s/user: \"temporal\"/user: \"$pg_user\"/" \
		-e 's/password: "temporal"/password: ""/' \
		-e "s/databaseName: \"temporal\"/databaseName: \"$db\"/" \
		-e "s/databaseName: \"temporal_visibility\"/databaseName: \"${db}_visibility\"/" \
		-e "s/connectAddr: \"127.0.0.1:5432\"/connectAddr: \"$pg_host:$pg_port\"/" \
		$shift_ports \
		"$module/config/development-postgres12.yaml" >"$dir/config/development-postgres12.yaml"
	echo "config $dir/config/development-postgres12.yaml (frontend $frontend)"
}

start() {
	cd "$dir"
	exec "$dir/server" --root "$dir" --config config --env development-postgres12 --allow-no-auth start
}

setup() {
	# shellcheck disable=SC2046 # one argument per search attribute
	PATH="$root/bin:$PATH" TEMPORAL_ADDRESS="$frontend" TEMPORAL_NAMESPACE="$namespace" \
		sh "$root/deploy/temporal/setup.sh" \
		$(sed -n 's/^ *- \(Shotflow[A-Za-z]*=[A-Za-z]*\)$/\1/p' "$root/docker-compose.yml")
}

all() {
	build
	schema
	config
	log="$dir/server.log"
	(start) >"$log" 2>&1 &
	server=$!
	trap 'kill "$server" 2>/dev/null; wait "$server"; exit 0' INT TERM
	echo "Temporal server pid $server on $frontend, logging to $log"
	setup
	echo "ready: TEMPORAL_ADDRESS=$frontend; loadgen -pids temporal=$server,..."
	wait "$server"
}

case "${1:-all}" in
build | schema | config | start | setup | all) "${1:-all}" ;;
*)
	echo "usage: $0 [all|build|schema|config|start|setup]" >&2
	exit 2
	;;
esac
