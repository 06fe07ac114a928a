#!/bin/sh
# verify.sh write PORT HOST KEY VALUE        - writes KEY on the master
# verify.sh read PORT HOST KEY VALUE MASTER  - waits until this replica serves
#                                              VALUE for KEY and reports MASTER
#                                              as its master
# HOST is the node's address in the cloud (see kv.py for where it listens).
set -eu
. ./common.sh
MODE=$1
PORT=$2
HOST=$3
KEY=$4
VALUE=$5
MASTER=${6:-}
if [ "$MODE" = write ]; then
    python3 "$KV_PY" put --host "$HOST" --port "$PORT" --key "$KEY" --value "$VALUE"
else
    python3 "$KV_PY" expect --host "$HOST" --port "$PORT" --key "$KEY" --value "$VALUE" \
        --master "$MASTER" --timeout 20
fi
