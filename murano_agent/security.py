"""Checks on incoming plans: the engine's RSA signature and the growing ``Stamp``."""

from __future__ import annotations

from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from murano_agent.config import ConfigError
from murano_agent.storage import write_in_place


class Rejected(Exception):
    """A message the agent refuses to run; the text is the logged reason."""


class SignatureVerifier:
    """Verifies RSA PKCS#1 v1.5 / SHA-256 signatures over ``queue name + body``."""

    def __init__(self, public_key_pem: str, queue: str) -> None:
        try:
            key = serialization.load_pem_public_key(public_key_pem.strip().encode("ascii"))
        except (ValueError, UnicodeEncodeError) as exc:
            raise ConfigError(f"engine_key is not a PEM public key: {exc}") from None
        if not isinstance(key, rsa.RSAPublicKey):
            raise ConfigError("engine_key must be an RSA public key")
        self._key = key
        self._prefix = queue.encode("utf-8")

    def verify_any(self, body: bytes, headers: dict) -> None:
        """Raise :class:`Rejected` unless the message's ``signature`` header, or during
        a rotation of its environment's key its ``previous-signature``, signs it with
        this agent's key (the engine signs with both keys while servers booted before
        the rotation still trust the previous one)."""
        try:
            self.verify(body, headers.get("signature"))
        except Rejected:
            if not headers.get("previous-signature"):
                raise
            self.verify(body, headers.get("previous-signature"))

    def verify(self, body: bytes, signature: bytes | str | None) -> None:
        """Raise :class:`Rejected` unless ``signature`` signs this queue and ``body``."""
        if not signature:
            raise Rejected("message is not signed")
        if isinstance(signature, str):
            # py-amqp hands back header bytes that happen to be valid UTF-8 as str.
            signature = signature.encode("utf-8", "surrogatepass")
        try:
            self._key.verify(signature, self._prefix + body, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise Rejected("signature does not match the message (tampered or wrong key)") from None


class StampGuard:
    """Remembers the last accepted ``Stamp`` in a file; a plan's stamp must be larger.

    With ``durable`` (signed messages, where the stamp is replay protection) each
    new stamp is fsync'ed; otherwise it is only written atomically.
    """

    def __init__(self, path: Path, durable: bool) -> None:
        self._path = path
        self._durable = durable
        try:
            self._last = int(path.read_text().strip() or 0)
        except FileNotFoundError:
            self._last = 0
        except ValueError:
            raise ConfigError(f"{path}: stamp file is corrupt") from None

    def check(self, stamp: object, required: bool) -> None:
        """Raise :class:`Rejected` for a missing (when ``required``) or non-growing stamp."""
        if stamp is None:
            if required:
                raise Rejected("plan has no Stamp (required when messages are signed)")
            return
        if not isinstance(stamp, int) or isinstance(stamp, bool):
            raise Rejected(f"plan Stamp {stamp!r} is not an integer")
        if stamp <= self._last:
            raise Rejected(f"replayed or stale plan: Stamp {stamp} <= last accepted {self._last}")

    def accept(self, stamp: object) -> None:
        """Record ``stamp`` (already checked) durably."""
        if not isinstance(stamp, int):
            return
        write_in_place(self._path, f"{stamp:020d}", sync=self._durable)
        self._last = stamp
