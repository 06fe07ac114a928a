#!/bin/sh
# install.sh - puts the service in place and counts the installations.
set -eu
. ./common.sh
mkdir -p "$HELLO_DIR"
cp hello.py "$HELLO_PY"
date -u +%FT%TZ >> "$HELLO_DIR/installs"
echo "installed in $HELLO_DIR"
