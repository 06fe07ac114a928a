"""Signing plans for agents: RSA PKCS#1 v1.5 over SHA-256 of queue name + body."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

#: Size of the RSA keys the engine makes for itself.
KEY_BITS = 2048


def engine_key(path: Path) -> bytes:
    """The PEM private key in ``path``, made (RSA, mode 0600) when the file does not exist.

    Engines starting side by side on the same state folder all end up with the
    one key that was written first: a new key is written to a temporary file and
    linked into place, which fails if another process got there before.
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = key.private_bytes(serialization.Encoding.PEM,
                            serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    temporary = Path(name)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink()
    return path.read_bytes()


class PlanSigner:
    """Holds the engine's private key; signs messages and exports the public key."""

    def __init__(self, private_key_pem: str | bytes) -> None:
        data = (
            private_key_pem.encode("ascii") if isinstance(private_key_pem, str) else private_key_pem
        )
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"signing key is not an unencrypted PEM private key: {exc}") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("signing key must be an RSA private key")
        self._key = key

    def sign(self, queue: str, body: str) -> bytes:
        """The raw signature of ``queue`` + ``body`` (both as UTF-8)."""
        return self._key.sign((queue + body).encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())

    def public_key_pem(self, line_prefix: str = "") -> str:
        """The public key as PKCS#1 PEM ("RSA PUBLIC KEY"), every line prefixed.

        A tab prefix makes the continuation lines of an INI value (agent ``engine_key``).
        """
        pem = (
            self._key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
            .decode("ascii")
        )
        return "\n".join(line_prefix + line for line in pem.strip().splitlines())
