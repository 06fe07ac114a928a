#!/bin/sh
echo "telnet for $1 installed"
