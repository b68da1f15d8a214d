#!/bin/sh
# One-shot setup of the Temporal server for shotflow, run by the temporal-setup service
# (temporalio/admin-tools image, which ships the `temporal` CLI):
#   1. wait until the cluster reports healthy;
#   2. create the namespace $TEMPORAL_NAMESPACE unless it exists;
#   3. register every search attribute given as an argument, NAME=TYPE (e.g.
#      ShotflowOrderID=Keyword). The list lives in docker-compose.yml, where
#      internal/testsupport/deploycheck checks it.
# Idempotent: an existing namespace or an attribute that already exists with the same type
# is left alone; an attribute that exists with a *different* type fails the setup.
set -eu

address="${TEMPORAL_ADDRESS:-temporal:7233}"
namespace="${TEMPORAL_NAMESPACE:-default}"
retention="${TEMPORAL_NAMESPACE_RETENTION:-72h}"
max_attempts="${SETUP_MAX_ATTEMPTS:-60}"
sleep_seconds="${SETUP_SLEEP_SECONDS:-2}"

if [ "$#" -eq 0 ]; then
	echo "usage: setup.sh NAME=TYPE..." >&2
	exit 2
fi

# retry DESCRIPTION COMMAND...: runs COMMAND until it succeeds or max_attempts is reached.
retry() {
	what="$1"
	shift
	attempt=1
	until "$@"; do
		if [ "$attempt" -ge "$max_attempts" ]; then
			echo "giving up: $what (after $attempt attempts)" >&2
			return 1
		fi
		echo "not yet: $what ($attempt/$max_attempts)"
		attempt=$((attempt + 1))
		sleep "$sleep_seconds"
	done
}

retry "Temporal at $address healthy" \
	temporal operator cluster health --address "$address"

if temporal operator namespace describe --address "$address" --namespace "$namespace" >/dev/null 2>&1; then
	echo "namespace $namespace already exists"
else
	retry "create namespace $namespace" \
		temporal operator namespace create --address "$address" --namespace "$namespace" --retention "$retention"
	echo "namespace $namespace created"
fi

# add_search_attribute NAME TYPE: succeeds when the attribute is registered with TYPE.
add_search_attribute() {
	if out=$(temporal operator search-attribute create --address "$address" --namespace "$namespace" \
		--name "$1" --type "$2" 2>&1); then
		return 0
	fi
	case "$out" in
	*"different type"*)
		echo "$out" >&2
		echo "search attribute $1 exists with another type than $2: fix it by hand" >&2
		exit 1
		;;
	*"already exists"* | *"already registered"*)
		return 0
		;;
	esac
	echo "$out" >&2
	return 1
}

for spec in "$@"; do
	name="${spec%%=*}"
	type="${spec#*=}"
	if [ -z "$name" ] || [ "$name" = "$spec" ] || [ -z "$type" ]; then
		echo "bad search attribute spec $spec (want NAME=TYPE)" >&2
		exit 2
	fi
	# The namespace may take a few seconds to reach every frontend cache after creation.
	retry "register search attribute $name ($type) in $namespace" add_search_attribute "$name" "$type"
	echo "search attribute $name ($type) registered"
done

temporal operator search-attribute list --address "$address" --namespace "$namespace"
echo "Temporal setup complete"
