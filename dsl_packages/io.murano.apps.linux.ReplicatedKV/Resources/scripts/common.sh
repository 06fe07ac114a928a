# Sourced by the service scripts. The node's home is the server's sandbox
# (the nearest folder above with agent.conf, on the local cloud) or
# /var/lib/replicated-kv on a real server; the service keeps its data, log
# and PID file in $KV_DATA below it.
kv_home() {
    dir=$(pwd)
    while [ "$dir" != "/" ]; do
        if [ -f "$dir/agent.conf" ]; then
            echo "$dir"
            return 0
        fi
        dir=$(dirname "$dir")
    done
    echo /var/lib/replicated-kv
}

KV_DATA="$(kv_home)/replicated-kv"
KV_PID="$KV_DATA/kv.pid"
KV_LOG="$KV_DATA/kv.log"
KV_PY="$KV_DATA/kv.py"

kv_running_pid() {
    if [ -f "$KV_PID" ]; then
        pid=$(cat "$KV_PID" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            echo "$pid"
            return 0
        fi
    fi
    return 1
}

kv_stop() {
    if pid=$(kv_running_pid); then
        kill -TERM "$pid" 2>/dev/null || true
        tries=0
        while kill -0 "$pid" 2>/dev/null && [ $tries -lt 50 ]; do
            sleep 0.1
            tries=$((tries + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$KV_PID" "$KV_DATA/kv.role"
}
