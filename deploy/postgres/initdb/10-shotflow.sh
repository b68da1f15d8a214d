#!/bin/sh
# Runs once, when the postgres container initialises an empty data volume (the official
# image runs /docker-entrypoint-initdb.d/* then). It creates shotflow's own login role and
# database next to the ones Temporal uses (temporal, temporal_visibility: those are created
# and migrated by the temporal-schema service, not here).
#
# No `set -e`/`set -u` on purpose: the image's entrypoint *sources* .sh files that are not
# executable, and shell options set here would leak into it. psql's ON_ERROR_STOP makes a
# failed statement fail the script (and so the container's initialisation) either way.
#
# Changing SHOTFLOW_DB_PASSWORD later does not touch an existing volume: run
# `ALTER ROLE shotflow PASSWORD '...'` or remove the volume (`docker compose down -v`).
psql -v ON_ERROR_STOP=1 \
	--username "$POSTGRES_USER" \
	--dbname "${POSTGRES_DB:-$POSTGRES_USER}" \
	--set shotflow_password="${SHOTFLOW_DB_PASSWORD:?SHOTFLOW_DB_PASSWORD must be set}" <<'EOSQL'
CREATE ROLE shotflow LOGIN PASSWORD :'shotflow_password';
CREATE DATABASE shotflow OWNER shotflow;
EOSQL
