#!/bin/sh
# Puts the plan's file (destinationFile, decoded by the agent) at the path
# given as the first argument, making its folder when missing.
set -e
target="$1"
mkdir -p "$(dirname "$target")"
cp -f "$(readlink -f destinationFile 2>/dev/null || echo destinationFile)" "$target"
