"""Putting a plan's files into the work folder: inline bodies and downloads."""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
from pathlib import Path
from typing import Any

from murano_agent import process
from murano_agent.plans import ERROR_INVALID, ERROR_UNEXPECTED, PlanError, safe_relative_path

_GIT_URL = re.compile(r"^(git://|git\+https?://)|\.git/?$")
_SVN_URL = re.compile(r"^svn://|^https?://.*/svn/")


def _target(folder: Path, name: str, where: str, work: Path) -> Path:
    """Where file ``name`` goes in ``folder``; a PlanError unless that is inside ``work``
    (links included: a folder some script replaced with a link leading out is refused)."""
    target = folder / safe_relative_path(name, where)
    root = work.resolve()
    if not folder.resolve().is_relative_to(root):
        raise PlanError(ERROR_INVALID, f"{where}: folder {folder} escapes the work folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.parent.resolve().is_relative_to(root):
        raise PlanError(ERROR_INVALID, f"{where}: file name {name!r} escapes the work folder")
    return target


def _download(url: str, target: Path, where: str, timeout: float) -> None:
    if _SVN_URL.search(url):
        raise PlanError(ERROR_INVALID, f"{where}: svn downloads ({url}) are not supported")
    if _GIT_URL.search(url):
        source = url.removeprefix("git+")
        done = process.run(["git", "clone", "--quiet", source, str(target)], target.parent, timeout)
        if done.exit_code != 0:
            reason = "timed out" if done.timed_out else done.stderr.strip()
            raise PlanError(ERROR_UNEXPECTED, f"{where}: git clone of {url} failed: {reason}")
        return
    if not url.startswith(("http://", "https://")):
        raise PlanError(ERROR_INVALID, f"{where}: URL {url!r} is not http(s), git or svn")
    import urllib.request  # only for a plan with a downloaded file: 20 ms of a start

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        raise PlanError(ERROR_UNEXPECTED, f"{where}: download of {url} failed: {exc}") from None


def put_file(
    file_id: str, entry: dict[str, Any], folder: Path, work: Path, timeout: float
) -> Path:
    """Write (or fetch) one ``Files`` entry under ``folder`` (inside ``work``); returns
    its path."""
    where = f"Files.{file_id}"
    target = _target(folder, entry["Name"], where, work)
    if "URL" in entry:
        _download(entry["URL"], target, where, timeout)
    elif entry["BodyType"] == "Base64":
        try:
            _write(target, base64.b64decode(entry["Body"]))
        except binascii.Error as exc:
            raise PlanError(ERROR_INVALID, f"{where}: Body is not valid base64: {exc}") from None
    else:
        _write(target, entry["Body"].encode("utf-8"))
    return target


def _write(target: Path, data: bytes) -> None:
    """Make ``target`` hold ``data``; a file left with exactly that content (an earlier
    plan's copy of the same script) is not rewritten, which spares the disk."""
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return
    except OSError:
        pass
    target.write_bytes(data)


def sweep(folder: Path, keep: set[str]) -> None:
    """Empty ``folder`` except the regular files at the relative paths in ``keep``
    (``/``-separated) and the folders holding them; creates ``folder`` if needed.

    Symbolic links are removed, never followed, so a file kept for overwriting is
    a plain file inside ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    keep_dirs = {path.rsplit("/", i)[0] for path in keep for i in range(1, path.count("/") + 1)}

    def clean(path: str, prefix: str) -> None:
        with os.scandir(path) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if relative in keep_dirs:
                        clean(entry.path, relative + "/")
                    else:
                        shutil.rmtree(entry.path)
                elif relative not in keep or not entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)

    clean(str(folder), "")
