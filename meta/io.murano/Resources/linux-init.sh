#!/bin/sh
# Boot script of a LinuxMuranoInstance: cloud-config has written
# /etc/murano/agent.conf; install the agent if the image lacks it and
# (re)start it as a service.
set -e
mkdir -p /etc/murano /var/murano/plans /var/log
if ! command -v muranoagent >/dev/null 2>&1 && ! command -v murano-agent >/dev/null 2>&1; then
    if command -v pip3 >/dev/null 2>&1; then
        pip3 install '%AGENT_SOURCE%'
    else
        pip install '%AGENT_SOURCE%'
    fi
fi
AGENT=$(command -v muranoagent || command -v murano-agent)
if command -v systemctl >/dev/null 2>&1; then
    cat > /etc/systemd/system/murano-agent.service <<UNIT
[Unit]
Description=Murano guest agent
After=network-online.target

[Service]
ExecStart=$AGENT --config-file /etc/murano/agent.conf
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
    systemctl daemon-reload
    systemctl enable murano-agent
    systemctl restart murano-agent
else
    nohup "$AGENT" --config-file /etc/murano/agent.conf >>/var/log/murano-agent.log 2>&1 &
fi
