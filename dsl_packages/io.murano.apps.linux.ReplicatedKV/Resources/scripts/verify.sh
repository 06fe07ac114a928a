#!/bin/sh
# verify.sh write PORT KEY VALUE      - writes KEY on the master
# verify.sh read PORT KEY VALUE MASTER - waits until this replica serves VALUE
#                                        for KEY and reports MASTER as its master
set -eu
. ./common.sh
MODE=$1
PORT=$2
KEY=$3
VALUE=$4
MASTER=${5:-}
if [ "$MODE" = write ]; then
    python3 "$KV_PY" put --port "$PORT" --key "$KEY" --value "$VALUE"
else
    python3 "$KV_PY" expect --port "$PORT" --key "$KEY" --value "$VALUE" --master "$MASTER" --timeout 20
fi
