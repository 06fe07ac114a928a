#!/bin/sh
# stop.sh - stops the service whose PID the node recorded.
set -eu
. ./common.sh
if pid=$(kv_running_pid); then
    kv_stop
    echo "stopped $pid"
else
    rm -f "$KV_PID"
    echo "not running"
fi
