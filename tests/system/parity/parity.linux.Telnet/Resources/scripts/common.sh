# Sourced by deployTelnet.sh.
LOG_PREFIX=parity
