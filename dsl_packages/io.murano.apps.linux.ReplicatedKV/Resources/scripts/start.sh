#!/bin/sh
# start.sh ROLE PORT HOST [MASTER] - starts (or keeps) the service on port PORT
# as master, or as a replica of MASTER (host:port). HOST is the node's address
# in the cloud: the service listens on it when the node really has it, else on
# 127.0.0.1 (see kv.py). Prints the address it listens at, HOST:PORT.
set -eu
. ./common.sh
ROLE=$1
PORT=$2
HOST=$3
MASTER=${4:-}
mkdir -p "$KV_DATA"
[ -f "$KV_PY" ] || cp kv.py "$KV_PY"
ADDRESS=$(python3 "$KV_PY" address --host "$HOST" --port "$PORT")
WANT="$ROLE $ADDRESS $MASTER"
if pid=$(kv_running_pid); then
    if [ "$(cat "$KV_DATA/kv.role" 2>/dev/null || true)" = "$WANT" ]; then
        echo "$ADDRESS"
        exit 0
    fi
    kv_stop
fi
if [ "$ROLE" = replica ] && [ -z "$MASTER" ]; then
    echo "a replica needs the master's address" >&2
    exit 2
fi
set -- --host "$HOST" --port "$PORT" --data "$KV_DATA" --pidfile "$KV_PID"
if [ "$ROLE" = replica ]; then
    set -- "$@" --master "$MASTER"
fi
# The port must be free: a service of someone else's there would answer the checks.
python3 -c 'import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
probe = socket.socket()
probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
probe.bind((host, int(port)))' "$ADDRESS" 2>/dev/null || {
    echo "port $PORT on ${ADDRESS%:*} is taken by another program; choose another basePort" >&2
    exit 1
}
# A new session, no terminal, output to the log: the agent does not wait for it.
setsid python3 "$KV_PY" serve "$@" </dev/null >>"$KV_LOG" 2>&1 &
echo "$WANT" > "$KV_DATA/kv.role"
python3 "$KV_PY" wait --host "$HOST" --port "$PORT" --timeout 15 || {
    echo "the service did not answer on $ADDRESS; last log lines:" >&2
    tail -n 20 "$KV_LOG" >&2 || true
    exit 1
}
echo "$ADDRESS"
