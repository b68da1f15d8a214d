#!/bin/sh
# Creates and migrates Temporal's two PostgreSQL databases (temporal, temporal_visibility).
# Run by the one-shot temporal-schema service (temporalio/admin-tools image) before the
# server starts; this replaces the deprecated temporalio/auto-setup image and follows
# Temporal's official compose example (samples-server/compose/scripts/setup-postgres.sh).
#
# Idempotent: `create` ignores an existing database, `setup-schema -v 0.0` keeps a newer
# version, and `update-schema` only applies missing versions, so it is safe on every
# `docker compose up` and upgrades the schema when the admin-tools/server tag is bumped.
#
# Environment: POSTGRES_SEEDS (host), DB_PORT, POSTGRES_USER, SQL_PASSWORD (read by
# temporal-sql-tool itself).
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS must name the PostgreSQL host}"
: "${POSTGRES_USER:?POSTGRES_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
port="${DB_PORT:-5432}"
schema_dir=/etc/temporal/schema/postgresql/v12

attempt=1
until nc -z -w 5 "$POSTGRES_SEEDS" "$port"; do
	if [ "$attempt" -ge 60 ]; then
		echo "PostgreSQL at $POSTGRES_SEEDS:$port is not reachable" >&2
		exit 1
	fi
	echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$port ($attempt/60)"
	attempt=$((attempt + 1))
	sleep 2
done

sql() {
	temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

sql --db temporal create
sql --db temporal setup-schema -v 0.0
sql --db temporal update-schema -d "$schema_dir/temporal/versioned"

sql --db temporal_visibility create
sql --db temporal_visibility setup-schema -v 0.0
sql --db temporal_visibility update-schema -d "$schema_dir/visibility/versioned"

echo "Temporal schema is up to date"
