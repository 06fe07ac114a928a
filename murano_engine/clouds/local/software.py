"""Heat's own resource types: software configs, cloud-config, multipart user data,
random strings."""

from __future__ import annotations

import string
from typing import Any

from murano_engine.clouds.local.resource import (
    Context,
    ResourceFailure,
    ResourceRecord,
    ResourceType,
)

SOFTWARE_CONFIG = "OS::Heat::SoftwareConfig"
CLOUD_CONFIG = "OS::Heat::CloudConfig"
MULTIPART = "OS::Heat::MultipartMime"
#: Types whose id a server's RAW ``user_data`` may name.
CONFIG_TYPES = (SOFTWARE_CONFIG, CLOUD_CONFIG, MULTIPART)


class SoftwareConfig(ResourceType):
    name = SOFTWARE_CONFIG
    properties = frozenset({"group", "config", "inputs", "outputs", "options"})
    attributes = frozenset({"config"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        config = props.get("config") or ""
        if not isinstance(config, str):
            raise ResourceFailure("config must be a string")
        return ctx.services.new_id(), {
            "config": config,
            "group": props.get("group") or "Heat::Ungrouped",
        }


class CloudConfig(ResourceType):
    name = CLOUD_CONFIG
    properties = frozenset({"cloud_config"})
    attributes = frozenset({"config"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        import yaml  # here: a plan checks templates, and only a made config needs YAML

        body = yaml.safe_dump(props.get("cloud_config") or {}, default_flow_style=False)
        return ctx.services.new_id(), {"config": "#cloud-config\n" + body}


def _subtype(text: str) -> str:
    if text.startswith("#cloud-config"):
        return "cloud-config"
    if text.startswith("#!"):
        return "x-shellscript"
    return "plain"


class MultipartMime(ResourceType):
    name = MULTIPART
    properties = frozenset({"parts", "group"})
    attributes = frozenset({"config"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        import email  # here: a template's checks (a plan) build no message
        from email.mime.multipart import MIMEMultipart
        from email.mime.text import MIMEText
        message = MIMEMultipart()
        for index, part in enumerate(props.get("parts") or []):
            if not isinstance(part, dict) or "config" not in part:
                raise ResourceFailure(f"parts[{index}] must be a map with a config")
            text = self._content(ctx, str(part["config"]))
            if part.get("type", "text") == "multipart":
                for sub in email.message_from_string(text).walk():
                    if not sub.is_multipart():
                        message.attach(sub)
                continue
            item = MIMEText(text, part.get("subtype") or _subtype(text), "utf-8")
            if part.get("filename"):
                item.add_header("Content-Disposition", "attachment", filename=part["filename"])
            message.attach(item)
        return ctx.services.new_id(), {"config": message.as_string()}

    @staticmethod
    def _content(ctx: Context, config: str) -> str:
        """A part's text: the named software config's, or the string itself."""
        found = ctx.services.find(config, *CONFIG_TYPES)
        return str(found.data["config"]) if found is not None else config


_CLASSES = {
    "lettersdigits": string.ascii_letters + string.digits,
    "letters": string.ascii_letters,
    "lowercase": string.ascii_lowercase,
    "uppercase": string.ascii_uppercase,
    "digits": string.digits,
    "hexdigits": string.digits + "ABCDEF",
    "octdigits": string.octdigits,
}


class RandomString(ResourceType):
    """A random string; ``get_resource`` gives the string itself, as in Heat."""

    name = "OS::Heat::RandomString"
    properties = frozenset(
        {"length", "sequence", "character_classes", "character_sequences", "salt"}
    )
    attributes = frozenset({"value"})

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        length = int(props.get("length", 32))
        pools: list[tuple[str, int]] = []
        for item in props.get("character_classes") or []:
            chosen = item.get("class", "lettersdigits")
            if chosen not in _CLASSES:
                raise ResourceFailure(f"unknown character class {chosen!r}")
            pools.append((_CLASSES[chosen], int(item.get("min", 1))))
        for item in props.get("character_sequences") or []:
            pools.append((str(item["sequence"]), int(item.get("min", 1))))
        if not pools:
            sequence = props.get("sequence") or "lettersdigits"
            if sequence not in _CLASSES:
                raise ResourceFailure(f"unknown sequence {sequence!r}")
            pools.append((_CLASSES[sequence], 0))
        needed = sum(count for _, count in pools)
        if needed > length:
            raise ResourceFailure(f"length {length} is shorter than the {needed} characters asked")
        import secrets  # here: as yaml above

        chars = [secrets.choice(pool) for pool, count in pools for _ in range(count)]
        everything = "".join(pool for pool, _ in pools)
        chars += [secrets.choice(everything) for _ in range(length - needed)]
        secrets.SystemRandom().shuffle(chars)
        value = "".join(chars)
        return value, {"value": value}

    def reference(self, record: ResourceRecord) -> Any:
        return record.data["value"]


TYPES: tuple[type[ResourceType], ...] = (SoftwareConfig, CloudConfig, MultipartMime, RandomString)
