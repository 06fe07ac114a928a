#!/bin/sh
# Stands in for the real installation: the helpers are beside the entry point.
. ./common.sh
sh ./installer.sh "$1"
