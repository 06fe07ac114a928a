#!/bin/sh
# configure.sh NODE PORT HOST - installs the service program and its settings.
# HOST is the node's address in the cloud (see kv.py for where it listens).
set -eu
. ./common.sh
NODE=$1
PORT=$2
HOST=$3
command -v python3 >/dev/null 2>&1 || { echo "python3 is not installed" >&2; exit 1; }
mkdir -p "$KV_DATA"
cp kv.py "$KV_PY"
ADDRESS=$(python3 "$KV_PY" address --host "$HOST" --port "$PORT")
printf 'node=%s\nport=%s\naddress=%s\n' "$NODE" "$PORT" "$ADDRESS" > "$KV_DATA/kv.conf"
echo "$NODE configured in $KV_DATA, to listen at $ADDRESS"
