#!/bin/sh
# start.sh ROLE PORT [MASTER] - starts (or keeps) the service on 127.0.0.1:PORT
# as master, or as a replica of MASTER (host:port). Prints its address.
set -eu
. ./common.sh
ROLE=$1
PORT=$2
MASTER=${3:-}
mkdir -p "$KV_DATA"
[ -f "$KV_PY" ] || cp kv.py "$KV_PY"
WANT="$ROLE $PORT $MASTER"
if pid=$(kv_running_pid); then
    if [ "$(cat "$KV_DATA/kv.role" 2>/dev/null || true)" = "$WANT" ]; then
        echo "127.0.0.1:$PORT"
        exit 0
    fi
    kv_stop
fi
if [ "$ROLE" = replica ] && [ -z "$MASTER" ]; then
    echo "a replica needs the master's address" >&2
    exit 2
fi
set -- --port "$PORT" --data "$KV_DATA" --pidfile "$KV_PID"
if [ "$ROLE" = replica ]; then
    set -- "$@" --master "$MASTER"
fi
# A new session, no terminal, output to the log: the agent does not wait for it.
setsid python3 "$KV_PY" serve "$@" </dev/null >>"$KV_LOG" 2>&1 &
echo "$WANT" > "$KV_DATA/kv.role"
python3 "$KV_PY" wait --port "$PORT" --timeout 15 || {
    echo "the service did not answer on 127.0.0.1:$PORT; last log lines:" >&2
    tail -n 20 "$KV_LOG" >&2 || true
    exit 1
}
echo "127.0.0.1:$PORT"
