"""Finding the guest agent's configuration in a server's user data.

The rule, applied depth first, the first match winning:

1. MIME multipart user data (as ``OS::Heat::MultipartMime`` builds it): each
   part in order; a part whose file name ends with ``agent.conf`` *is* the
   agent config; any other part is searched by these same rules.
2. A cloud-config document (first line ``#cloud-config``): the first
   ``write_files`` entry whose ``path`` ends with ``agent.conf``; its
   ``content`` is decoded per ``encoding`` (``b64``/``base64``,
   ``gz``/``gzip``, ``gz+b64``/``gzip+base64``, plain when absent).
3. A shell script (first line ``#!``) assigning the base64 of the config to
   ``AgentConfigBase64='...'`` on a line of its own, as the boot script of
   Murano's (and this engine's) Linux instances does.
4. Anything else (other scripts, ``#ps1`` scripts, plain text) holds no agent
   config; such a server boots without an agent.
"""

from __future__ import annotations

import base64
import binascii
import email
import gzip
import re
import zlib
from email.message import Message

from murano_engine.clouds.base import CloudError
from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.yaml_loader import load_plain

AGENT_CONF_SUFFIX = "agent.conf"
_SHELL_ASSIGNMENT = re.compile(r"^AgentConfigBase64='([A-Za-z0-9+/=\s]*)'\s*$", re.MULTILINE)


class UserDataError(CloudError):
    """User data that claims to carry the agent config but cannot be read."""


def find_agent_config(user_data: str | None) -> str | None:
    """The agent's INI text from ``user_data`` (see the module rule), or None."""
    if not user_data:
        return None
    if _looks_like_mime(user_data):
        return _from_message(email.message_from_string(user_data))
    if user_data.lstrip().startswith("#cloud-config"):
        return _from_cloud_config(user_data)
    if user_data.startswith("#!"):
        return _from_shell_script(user_data)
    return None


def _looks_like_mime(text: str) -> bool:
    head = text.lstrip()[:512].lower()
    return head.startswith(("content-type:", "mime-version:")) and "multipart/" in head


def _from_message(message: Message) -> str | None:
    if not message.is_multipart():
        return _from_part(message)
    for part in message.get_payload():
        found = _from_message(part)
        if found is not None:
            return found
    return None


def _from_part(part: Message) -> str | None:
    raw = part.get_payload(decode=True)
    if raw is None:
        return None
    text = raw.decode(part.get_content_charset() or "utf-8", errors="replace")
    if (part.get_filename() or "").endswith(AGENT_CONF_SUFFIX):
        return text
    return find_agent_config(text)


def _from_cloud_config(text: str) -> str | None:
    try:
        document = load_plain(text, "user data")
    except LoadError as exc:
        raise UserDataError(f"user data is not valid cloud-config YAML: {exc}") from None
    if not isinstance(document, dict):
        return None
    for entry in document.get("write_files") or []:
        if isinstance(entry, dict) and str(entry.get("path", "")).endswith(AGENT_CONF_SUFFIX):
            return _decode(entry.get("content", ""), entry.get("encoding"), entry["path"])
    return None


def _from_shell_script(text: str) -> str | None:
    found = _SHELL_ASSIGNMENT.search(text)
    if found is None or not found.group(1).strip():
        return None
    try:
        return base64.b64decode("".join(found.group(1).split())).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise UserDataError(f"AgentConfigBase64 in the boot script is not base64 of "
                            f"UTF-8 text: {exc}") from None


def _decode(content: object, encoding: object, path: str) -> str:
    kind = str(encoding or "").lower()
    data = content if isinstance(content, bytes) else str(content).encode()
    try:
        if kind in ("b64", "base64", "gz+b64", "gzip+base64", "gz+base64"):
            data = base64.b64decode(data, validate=False)
        if kind.startswith(("gz", "gzip")):
            data = gzip.decompress(data)
        elif kind not in ("", "text/plain", "b64", "base64"):
            raise UserDataError(f"write_files {path}: unknown encoding {encoding!r}")
    except (binascii.Error, OSError, EOFError, zlib.error) as exc:
        raise UserDataError(f"write_files {path}: cannot decode {kind} content: {exc}") from None
    return data.decode("utf-8")
