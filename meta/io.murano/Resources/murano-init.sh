#!/bin/sh
# First half of a LinuxMuranoInstance's boot script (boot_script_<name>): make
# sure the guest agent is installed and registered as a service.
PATH="/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:$PATH"
export PATH
if ! command -v muranoagent >/dev/null 2>&1 && ! command -v murano-agent >/dev/null 2>&1; then
    if ! command -v pip3 >/dev/null 2>&1 && ! command -v pip >/dev/null 2>&1; then
        if command -v apt-get >/dev/null 2>&1; then
            apt-get update && apt-get install -y python3-pip
        elif command -v dnf >/dev/null 2>&1; then
            dnf install -y python3-pip
        elif command -v yum >/dev/null 2>&1; then
            yum install -y python3-pip
        fi
    fi
    PIP=$(command -v pip3 || command -v pip)
    "$PIP" install '%PIP_SOURCE%' || "$PIP" install --break-system-packages '%PIP_SOURCE%'
fi
MURANO_AGENT_BIN=$(command -v muranoagent || command -v murano-agent)
mkdir -p /etc/murano /var/murano/plans
if command -v systemctl >/dev/null 2>&1; then
    echo '%MURANO_AGENT_SERVICE%' | base64 -d \
        | sed "s|@AGENT@|$MURANO_AGENT_BIN|" > /etc/systemd/system/murano-agent.service
    systemctl daemon-reload
    systemctl enable murano-agent
fi
