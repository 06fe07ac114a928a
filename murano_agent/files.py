"""Putting a plan's files into the work folder: inline bodies and downloads."""

from __future__ import annotations

import base64
import binascii
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from murano_agent import process
from murano_agent.plans import ERROR_INVALID, ERROR_UNEXPECTED, PlanError, safe_relative_path

_GIT_URL = re.compile(r"^(git://|git\+https?://)|\.git/?$")
_SVN_URL = re.compile(r"^svn://|^https?://.*/svn/")


def _target(folder: Path, name: str, where: str) -> Path:
    target = folder / safe_relative_path(name, where)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.parent.resolve().is_relative_to(folder.resolve()):
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
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        raise PlanError(ERROR_UNEXPECTED, f"{where}: download of {url} failed: {exc}") from None


def put_file(file_id: str, entry: dict[str, Any], folder: Path, timeout: float) -> Path:
    """Write (or fetch) one ``Files`` entry under ``folder``; returns its path."""
    where = f"Files.{file_id}"
    target = _target(folder, entry["Name"], where)
    if "URL" in entry:
        _download(entry["URL"], target, where, timeout)
    elif entry["BodyType"] == "Base64":
        try:
            target.write_bytes(base64.b64decode(entry["Body"]))
        except binascii.Error as exc:
            raise PlanError(ERROR_INVALID, f"{where}: Body is not valid base64: {exc}") from None
    else:
        target.write_text(entry["Body"], encoding="utf-8", newline="")
    return target
