#!/bin/sh
# configure.sh NODE PORT - installs the service program and its settings.
set -eu
. ./common.sh
NODE=$1
PORT=$2
command -v python3 >/dev/null 2>&1 || { echo "python3 is not installed" >&2; exit 1; }
mkdir -p "$KV_DATA"
cp kv.py "$KV_PY"
printf 'node=%s\nport=%s\n' "$NODE" "$PORT" > "$KV_DATA/kv.conf"
echo "$NODE configured in $KV_DATA"
