# Sourced by the scripts. The service lives in hello-web/ under the server's
# home: the nearest folder above holding agent.conf (the sandbox, on the local
# cloud), else /var/lib.
hello_home() {
    dir=$(pwd)
    while [ "$dir" != "/" ]; do
        if [ -f "$dir/agent.conf" ]; then
            echo "$dir/hello-web"
            return 0
        fi
        dir=${dir%/*}
        dir=${dir:-/}
    done
    echo /var/lib/hello-web
}

HELLO_DIR=$(hello_home)
HELLO_PY="$HELLO_DIR/hello.py"
HELLO_PID="$HELLO_DIR/hello.pid"
HELLO_LOG="$HELLO_DIR/hello.log"
