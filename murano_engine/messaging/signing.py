"""Signing plans for agents: RSA PKCS#1 v1.5 over SHA-256 of queue name + body.

Every environment has a key of its own (:class:`KeyRing`): the agents an environment
boots trust its public key alone, so a plan signed for another environment is refused
by the agent itself.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

from murano_common.files import write_all

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from types import ModuleType

#: Size of the RSA keys the engine makes for itself.
KEY_BITS = 2048


@functools.cache
def _crypto() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """cryptography's (hashes, serialization, padding, rsa), imported on first use: a
    run that signs nothing (a plan of a new environment) does not import them."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    return hashes, serialization, padding, rsa


def _new_key_pem() -> bytes:
    _, serialization, _, rsa = _crypto()
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _write_private(path: Path, pem: bytes, replace: bool) -> None:
    """Write ``pem`` to ``path`` (mode 0600, its folder 0700): made in a temporary file
    and linked into place (an existing file wins) or, with ``replace``, renamed over it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    temporary = Path(name)
    try:
        write_all(fd, pem, temporary)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(temporary, path)
            return
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


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
    _write_private(path, _new_key_pem(), replace=False)
    return path.read_bytes()


class PlanSigner:
    """Holds the engine's private key; signs messages and exports the public key."""

    def __init__(self, private_key_pem: str | bytes) -> None:
        data = (
            private_key_pem.encode("ascii") if isinstance(private_key_pem, str) else private_key_pem
        )
        _, serialization, _, rsa = _crypto()
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"signing key is not an unencrypted PEM private key: {exc}") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("signing key must be an RSA private key")
        self._key = key

    def sign(self, queue: str, body: str) -> bytes:
        """The raw signature of ``queue`` + ``body`` (both as UTF-8)."""
        hashes, _, padding, _ = _crypto()
        return self._key.sign((queue + body).encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())

    def public_key_pem(self, line_prefix: str = "") -> str:
        """The public key as PKCS#1 PEM ("RSA PUBLIC KEY"), every line prefixed.

        A tab prefix makes the continuation lines of an INI value (agent ``engine_key``).
        """
        serialization = _crypto()[1]
        pem = (
            self._key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
            .decode("ascii")
        )
        return "\n".join(line_prefix + line for line in pem.strip().splitlines())


class EnvironmentKeys:
    """The keys one environment's plans are signed with: the current one, and the one
    it replaced while a rotation is under way (its servers booted before the rotation
    trust that one)."""

    def __init__(self, current: PlanSigner, previous: PlanSigner | None = None) -> None:
        self.current = current
        self.previous = previous

    def headers(self, queue: str, body: str) -> dict[str, bytes]:
        """The signature headers of one message: ``signature`` by the current key, and
        ``previous-signature`` by the previous one during a rotation."""
        headers = {"signature": self.current.sign(queue, body)}
        if self.previous is not None:
            headers["previous-signature"] = self.previous.sign(queue, body)
        return headers


_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class KeyRing:
    """One RSA key per environment in ``folder`` (mode 0700): ``<environment>.pem``
    (mode 0600), made on first use and removed with the environment; during a rotation
    the key it replaced stays as ``<environment>.previous.pem``.

    The folder is the engine's (beside the local cloud's servers, never in one of
    their folders); an environment's id is the engine's record of it, never a model's.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._loaded: dict[str, EnvironmentKeys] = {}

    def _path(self, environment_id: str, previous: bool = False) -> Path:
        name = str(environment_id)
        if not _SAFE_NAME.fullmatch(name) or name in (".", ".."):  # a command line's own id
            name = "x-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.folder / (f"{name}.previous.pem" if previous else f"{name}.pem")

    def key_file(self, environment_id: str) -> Path:
        """The file of the environment's current key (made on first use)."""
        return self._path(environment_id)

    def keys(self, environment_id: str) -> EnvironmentKeys:
        """The environment's keys, its current one made when it has none."""
        with self._lock:
            keys = self._loaded.get(environment_id)
            if keys is None:
                current = PlanSigner(engine_key(self._path(environment_id)))
                try:
                    previous: PlanSigner | None = PlanSigner(
                        self._path(environment_id, previous=True).read_bytes())
                except FileNotFoundError:
                    previous = None
                keys = self._loaded[environment_id] = EnvironmentKeys(current, previous)
            return keys

    def rotate(self, environment_id: str) -> EnvironmentKeys:
        """Give the environment a new key; the current one becomes the previous one
        (replacing an earlier previous key), so servers booted before still take plans."""
        with self._lock:
            current = self._path(environment_id)
            pem = engine_key(current)
            _write_private(self._path(environment_id, previous=True), pem, replace=True)
            _write_private(current, _new_key_pem(), replace=True)
            self._loaded.pop(environment_id, None)
        return self.keys(environment_id)

    def retire_previous(self, environment_id: str) -> bool:
        """End a rotation: forget the previous key (servers that trust only it refuse
        plans from now on); False when there was none."""
        with self._lock:
            path = self._path(environment_id, previous=True)
            self._loaded.pop(environment_id, None)
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            return True

    def remove(self, environment_id: str) -> None:
        """Delete the environment's keys (it is gone)."""
        with self._lock:
            self._loaded.pop(environment_id, None)
            for previous in (False, True):
                self._path(environment_id, previous).unlink(missing_ok=True)

    def environments(self) -> list[str]:
        """The environments that have a key."""
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(n[:-4] for n in names
                      if n.endswith(".pem") and not n.endswith(".previous.pem"))
