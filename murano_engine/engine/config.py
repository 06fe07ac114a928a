"""The engine's configuration: the options of ``[engine]``, ``[rabbitmq]``, ``[heat]``,
``[networking]``, ``[local_cloud]``, ``[mistral]``, ``[glance]`` and ``[quotas]`` (every
one with its default and help in :data:`SCHEMA`; ``murano-engine.conf.sample`` lists them).

An environment variable ``MURANO_<SECTION>_<OPTION>`` (upper case) overrides the
file. With no file and no ``[heat]`` settings the engine deploys to the embedded
local cloud, its agents talking to the RabbitMQ the ``[rabbitmq]`` defaults name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from murano_common.options import ConfigError, Option, Schema, Section, Values
from murano_engine.dsl.limits import (
    DEFAULT_FORM_MEMORY_LIMIT,
    DEFAULT_FORM_STEP_LIMIT,
    DEFAULT_FORM_TIME_LIMIT,
    DEFAULT_STACK_TIMEOUT,
    DEFAULT_STATE_DIR,
    DEFAULT_TASK_MEMORY_LIMIT,
    DEFAULT_TASK_STEP_LIMIT,
    DEFAULT_TASK_TIME_LIMIT,
)

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA", "Config", "ConfigError", "broker_ssl", "broker_url",
           "load_config"]

#: Loaded engine configuration: sections by name, each option by attribute or by name.
Config = Values

#: Where the deployment journals' key is kept unless ``[engine] journal_key_file`` says.
DEFAULT_JOURNAL_KEY_FILE = "~/.local/state/murano-engine/journal.key"

ENGINE = Section(
    "engine", "How the engine runs deployments.",
    Option("agent_timeout", int, 3600,
           "Seconds the engine waits for a guest agent's result of one plan."),
    Option("disable_murano_agent", bool, False,
           "Refuse every plan sent to guest agents (deployments must not use them)."),
    Option("stack_timeout", float, DEFAULT_STACK_TIMEOUT,
           "Seconds the engine waits for a stack operation (create, update, delete) of "
           "Heat or the local cloud to finish; [heat] and [local_cloud] stack_timeout "
           "override it for one cloud."),
    Option("sign_plans", bool, True,
           "Sign every plan; the agents the engine boots get the public key and refuse "
           "what is not signed with it. false: plans go unsigned (Murano's default, for "
           "agents without engine_key)."),
    Option("signing_key", str, "",
           "RSA private key file (PEM) every environment's plans are signed with, made "
           "(mode 0600) on first use when missing. Empty (the default): each environment "
           "has a key of its own, in signing-keys/ of [local_cloud] state_dir (a "
           "project's own under murano-api), removed with the environment."),
    Option("journal_key_file", str, DEFAULT_JOURNAL_KEY_FILE,
           "The key of the deployment journals' chained digests (HMAC-SHA256), made "
           "(random, mode 0600) on first use. Keep it outside the state files' folders; "
           "API workers on several hosts need the same file. Empty: unkeyed digests, "
           "which catch an edit by hand but not a forger."),
    Option("class_configs", str, "",
           "Folder of class config files (<class name>-<version>.json or .yaml) giving "
           "classes' Config property values."),
    Option("home_region", str, "",
           "The region an environment deploys to by default (empty: the engine's own)."),
    Option("agent_source", str, None,
           "What a Linux instance installs with pip when its image has no agent "
           "(default murano-agent)."),
    Option("agent_storage", str, None,
           "The agent's plan storage folder in instances (default: per instance type)."),
    Option("task_time_limit", float, DEFAULT_TASK_TIME_LIMIT,
           "Seconds one engine task (deployment, action, static action, test run, "
           "murano-engine run) may take, sleeps and waits included; 0: no limit."),
    Option("task_step_limit", int, DEFAULT_TASK_STEP_LIMIT,
           "MuranoPL steps (statements, loop iterations, lambda evaluations) one engine "
           "task may run; 0: no limit."),
    Option("task_memory_limit", int, DEFAULT_TASK_MEMORY_LIMIT,
           "Megabytes of resident memory a task may add to the engine process's (read "
           "every 1000 steps; past it the task fails, its values are freed and given "
           "back to the system); 0: no limit."),
    Option("form_time_limit", float, DEFAULT_FORM_TIME_LIMIT,
           "Seconds one evaluation of a package's UI/ui.yaml (a wizard page, a ui/model "
           "call, murano-engine ui-model) may take; 0: no limit."),
    Option("form_step_limit", int, DEFAULT_FORM_STEP_LIMIT,
           "yaql calls one evaluation of a UI/ui.yaml may make; 0: no limit."),
    Option("form_memory_limit", int, DEFAULT_FORM_MEMORY_LIMIT,
           "Megabytes of resident memory one evaluation of a UI/ui.yaml may add to the "
           "process's; 0: no limit."),
)

RABBITMQ = Section(
    "rabbitmq", "The broker the engine and the guest agents exchange plans and results on.",
    Option("url", str, "",
           "A full broker URL (e.g. amqp://user:password@host:5672/vhost); overrides the "
           "parts below."),
    Option("host", str, "127.0.0.1", "Broker host."),
    Option("port", int, 5672, "Broker port."),
    Option("login", str, "guest", "Broker user."),
    Option("password", str, "guest", "Broker password."),
    Option("virtual_host", str, "/", "Broker virtual host."),
    Option("ssl", bool, False,
           "Connect with TLS (the engine and the agents alike; applies to the host and port "
           "settings, a url says its own scheme)."),
    Option("ca_certs", str, "",
           "CA certificates file (PEM) the engine verifies the broker's TLS certificate with "
           "(empty: the system's CAs)."),
    Option("insecure", bool, False,
           "With ssl: do not require a valid broker certificate (engine and agents)."),
    Option("server_identities", bool, True,
           "Give each server's agent a broker user of its own, allowed only to consume its "
           "input queue and publish to its environment's result exchange, removed with the "
           "server (RabbitMQ only; needs its management plugin). False: agents get the "
           "login above, as in Murano."),
    Option("management_url", str, "",
           "RabbitMQ's management HTTP API with an administrator's login, used to make and "
           "remove the servers' broker users (e.g. http://admin:secret@broker:15672); "
           "empty: http://<login>:<password>@<host>:15672 from the options above."),
    Option("server_max_connections", int, 4,
           "Connections each server's broker user may hold at once (RabbitMQ's per-user "
           "max-connections, set on every user server_identities makes); 0: no limit."),
    Option("server_max_channels", int, 64,
           "Channels each server's broker user may have open at once, all its connections "
           "together (RabbitMQ's per-user max-channels); 0: no limit."),
    Option("results_max_length", int, 1000,
           "Unread messages an environment's results queue may hold: past it (or "
           "results_max_bytes) the broker refuses an agent's result (reject-publish) and "
           "the agent sends it again later, so a guest flooding its results cannot grow "
           "the queue. A RabbitMQ policy (murano-results) on the agents' virtual host, "
           "set with server_identities; 0: no limit."),
    Option("results_max_bytes", int, 64 << 20,
           "Bytes of unread message bodies an environment's results queue may hold (see "
           "results_max_length); 0: no limit."),
)

HEAT = Section(
    "heat", "OpenStack Heat. Set auth_url (keystone) or url plus token to deploy to Heat "
            "instead of the local cloud.",
    Option("auth_url", str, "", "Keystone v3 URL."),
    Option("url", str, "", "Heat endpoint (overrides the catalog's)."),
    Option("token", str, "", "A fixed token (with url, instead of keystone credentials)."),
    Option("username", str, "", "Keystone user name."),
    Option("user_id", str, "", "Keystone user id (instead of username)."),
    Option("password", str, "", "Keystone password."),
    Option("project_name", str, "", "Keystone project name."),
    Option("project_id", str, "", "Keystone project id (instead of project_name)."),
    Option("user_domain_name", str, "Default", "The user's domain."),
    Option("user_domain_id", str, "", "The user's domain id (instead of its name)."),
    Option("project_domain_name", str, "Default", "The project's domain."),
    Option("project_domain_id", str, "", "The project's domain id (instead of its name)."),
    Option("region_name", str, "", "Region of the Heat endpoint in the catalog."),
    Option("endpoint_type", str, "public", "Catalog interface: public, internal or admin."),
    Option("insecure", bool, False, "Do not verify Heat's and keystone's TLS certificates."),
    Option("cacert", str, "", "CA certificates file for Heat and keystone."),
    Option("request_timeout", float, None, "Seconds one HTTP request may take (default: no "
                                           "limit)."),
    Option("stack_timeout", float, None,
           "Seconds to wait for a Heat stack operation; also Heat's own stack timeout "
           "(default: [engine] stack_timeout)."),
    Option("poll_interval", float, 2.0, "Seconds between polls of a stack in progress."),
    Option("stack_tags", str, "murano", "Tags of the stacks (comma-separated)."),
    Option("no_compute", bool, False,
           "The cloud has Heat but no Nova, Neutron or Cinder: their resource types go to "
           "stand-in provider templates (murano_engine/clouds/heat_providers) that boot "
           "nothing, sent with every stack."),
)

NETWORKING = Section(
    "networking", "Networks the engine plans for environments (io.murano.system.NetworkExplorer).",
    Option("env_ip_template", str, "10.0.0.0", "First address of the environments' subnets."),
    Option("max_environments", int, 250, "How many environment subnets to plan for."),
    Option("max_hosts", int, 250, "How many hosts each environment subnet holds."),
    Option("default_dns", str, "", "DNS servers of new subnets (comma-separated)."),
    Option("external_network", str, "public", "The network floating addresses come from."),
    Option("router_name", str, "murano-default-router", "The router environments connect to."),
    Option("create_router", bool, True, "Create that router when it does not exist."),
)

LOCAL_CLOUD = Section(
    "local_cloud", "The embedded local cloud (used when [heat] is not configured).",
    Option("state_dir", str, DEFAULT_STATE_DIR, "Folder of the local cloud's stacks and servers."),
    Option("broker_url", str, "",
           "The broker the local servers' agents use instead of the one their config names."),
    Option("isolation", str, "namespaces",
           "How servers' agents run: 'namespaces' (each in a sandbox of its own: network, "
           "mount, PID, UTS, IPC and user namespaces; needs root and util-linux/iproute2) or "
           "'none' (plain processes with the host in reach: single-user development only)."),
    Option("max_processes", int, 512,
           "Processes a sandboxed server may have at once (its control group's pids limit); "
           "a fork past it fails with EAGAIN inside the server."),
    Option("relay_connections", int, 4,
           "Broker connections a sandboxed server's relay holds at once (its agent takes "
           "one); past it a new connection is closed as soon as it is accepted. 0: no "
           "limit."),
    Option("relay_channels", int, 16,
           "AMQP channels each connection through a sandboxed server's relay may have open "
           "(the relay lowers channel_max in the connection's handshake, and the broker "
           "refuses a channel past it); 0: as many as the broker allows."),
    Option("powershell", str, "", "PowerShell executable for Windows images (default: found "
                                  "on the PATH)."),
    Option("floating_cidr", str, "172.24.4.0/24", "Where floating addresses come from."),
    Option("parallel", int, 64, "Resources created or deleted at the same time."),
    Option("stack_timeout", float, None,
           "Seconds to wait for a stack operation (default: [engine] stack_timeout)."),
    Option("poll_interval", float, 0.05, "Seconds between polls of a stack in progress."),
)

MISTRAL = Section(
    "mistral", "OpenStack Mistral, for packages that run workflows "
               "(io.murano.system.MistralClient).",
    Option("url", str, "",
           "Mistral endpoint (e.g. http://host:8989/v2); empty: found in the keystone "
           "catalog when [heat] auth_url is set. Requests carry the [heat] keystone token "
           "when there is one."),
    Option("service_type", str, "workflowv2", "Mistral's service type in the catalog."),
    Option("endpoint_type", str, "public", "Catalog interface: public, internal or admin."),
    Option("insecure", bool, False, "Do not verify Mistral's TLS certificate."),
    Option("cafile", str, "", "CA certificates file for Mistral."),
    Option("poll_interval", float, 2.0,
           "Seconds between reads of a running workflow execution."),
)

GLANCE = Section(
    "glance", "OpenStack Glance's metadata definitions (io.murano.system.MetadefBrowser).",
    Option("url", str, "",
           "Glance endpoint (e.g. http://host:9292); empty: found in the keystone catalog "
           "when [heat] auth_url is set, else there are no metadata definitions."),
    Option("endpoint_type", str, "public", "Catalog interface: public, internal or admin."),
)

QUOTAS = Section(
    "quotas", "How much one project may have at once, as Nova's quotas (see "
              "murano_engine/engine/quotas.py); -1 is no limit. murano-api applies them to "
              "the token's project; murano-engine deploy to project 'local', its local "
              "cloud's. Past a quota a request is refused (murano-api: 403) naming the quota "
              "and its value, and nothing is made.",
    Option("servers", int, 20,
           "Servers a project's local cloud may hold (a stack push that would take it past "
           "them is refused whole: the stack is not changed and no server is made)."),
    Option("environments", int, 50, "Environments a project may have in murano-api."),
    Option("packages", int, 100, "Packages a project may own in murano-api's catalog."),
    Option("deployments", int, 10,
           "Deployments and actions of a project murano-api runs (or holds waiting to run) "
           "at once; deletions count too but are never refused."),
    Option("overrides", str, "",
           "Projects with quotas of their own: entries 'PROJECT: NAME=VALUE, ...' on lines "
           "of their own (indented under the option) or separated by ';', e.g. 'demo: "
           "servers=5, environments=2; 8d4e1b0c: servers=-1'. A quota an entry does not "
           "name is the default above."),
)

SCHEMA = Schema(
    ENGINE, RABBITMQ, HEAT, NETWORKING, LOCAL_CLOUD, MISTRAL, GLANCE, QUOTAS,
    title="murano-engine deploy --config murano-engine.conf\n"
          "MURANO_<SECTION>_<OPTION> environment variables override this file.",
)


def load_config(path: str | os.PathLike[str] | None = None,
                environ: Mapping[str, str] | None = None,
                schema: Schema = SCHEMA) -> Config:
    """Defaults, then the file, then ``MURANO_<SECTION>_<OPTION>`` variables.

    ``environ`` defaults to ``os.environ``; ``schema`` is the whole file's when it
    holds other programs' sections too (murano-api's). Quotas are checked too (a bad
    ``[quotas] overrides`` entry is a :class:`ConfigError`).
    """
    from murano_engine.engine.quotas import quota_table
    values = schema.load(path, environ=os.environ if environ is None else environ)
    quota_table(values, values.source)
    return values


def broker_url(config: Mapping[str, Mapping[str, Any]]) -> str:
    """The AMQP URL the engine and the agents use."""
    rabbit = config["rabbitmq"]
    if rabbit.get("url"):
        return str(rabbit["url"])
    vhost = str(rabbit["virtual_host"]).lstrip("/")
    return (f"amqp://{rabbit['login']}:{rabbit['password']}@{rabbit['host']}:"
            f"{rabbit['port']}/{vhost}")


def broker_ssl(config: Mapping[str, Mapping[str, Any]]) -> bool | dict[str, Any]:
    """The engine's TLS settings for :func:`broker_url` (kombu's ``ssl``), as the agents'.

    False without ``ssl`` or when ``url`` is set (a URL says its own scheme); else the
    certificate requirement (``insecure`` relaxes it) and the ``ca_certs`` file.
    """
    rabbit = config["rabbitmq"]
    if not rabbit.get("ssl") or rabbit.get("url"):
        return False
    import ssl  # on first use: it costs `murano-engine run` start-up time

    ca_certs = rabbit.get("ca_certs")
    if not rabbit.get("insecure"):
        required = ssl.CERT_REQUIRED
    else:
        required = ssl.CERT_OPTIONAL if ca_certs else ssl.CERT_NONE
    options: dict[str, Any] = {"cert_reqs": required}
    if ca_certs:
        options["ca_certs"] = str(ca_certs)
    return options
