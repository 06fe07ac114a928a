#!/bin/sh
# configure.sh PORT HOST GREETING_BASE64 - (re)starts the service answering the
# greeting on HOST:PORT, counts the configurations.
set -eu
. ./common.sh
PORT=$1
HOST=$2
echo "$3" | base64 -d > "$HELLO_DIR/greeting"
if [ -f "$HELLO_PID" ] && kill -0 "$(cat "$HELLO_PID")" 2>/dev/null; then
    kill -TERM "$(cat "$HELLO_PID")"
    python3 -I -S "$HELLO_PY" gone --pidfile "$HELLO_PID" --timeout 10
fi
# Returns once the service listens (it goes on in a session of its own).
python3 -I -S "$HELLO_PY" serve --host "$HOST" --port "$PORT" --home "$HELLO_DIR" \
    </dev/null >>"$HELLO_LOG" 2>&1 || {
    echo "the service does not listen on $HOST:$PORT; its log ends with:" >&2
    tail -n 20 "$HELLO_LOG" >&2
    exit 1
}
date -u +%FT%TZ >> "$HELLO_DIR/configures"
echo "http://$HOST:$PORT/"
