#!/bin/sh
# Second half of a LinuxMuranoInstance's boot script: write the agent's
# configuration (and the broker's CA certificate, when the engine has one),
# then (re)start the agent.
AgentConfigBase64='%AGENT_CONFIG_BASE64%'
CaCertificateBase64='%CA_ROOT_CERT_BASE64%'
mkdir -p /etc/murano/certs
echo "$AgentConfigBase64" | base64 -d > /etc/murano/agent.conf
chmod 600 /etc/murano/agent.conf
if [ -n "$CaCertificateBase64" ]; then
    echo "$CaCertificateBase64" | base64 -d > /etc/murano/certs/ca_certs
    chmod 644 /etc/murano/certs/ca_certs
fi
if command -v systemctl >/dev/null 2>&1; then
    systemctl restart murano-agent
else
    MURANO_AGENT_BIN=$(command -v muranoagent || command -v murano-agent)
    nohup "$MURANO_AGENT_BIN" --config-file /etc/murano/agent.conf \
        >>/var/log/murano-agent.log 2>&1 &
fi
