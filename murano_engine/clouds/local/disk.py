"""A sandboxed server's ``/sandbox`` on a disk of its flavor's size.

The server's folder is the mount point of an ext4 image beside it
(``.<server id>.disk``, sparse: it takes host space only as the server
writes), loop-mounted on the host so the engine reads the agent's files where
it always did; past the flavor's disk the server's writes fail with ENOSPC and
the host's filesystem is untouched. A new image is a sparse copy of a
formatted one kept per size (in ``~/.cache/murano-engine/disk-templates``, or
under ``$XDG_CACHE_HOME``), which is much cheaper than ``mkfs`` at each start.
The image outlives a stop (the server's data stays) and goes with the server.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path

from murano_engine.clouds.local import syscalls
from murano_engine.dsl import concurrency

TOOLS = ("mkfs.ext4", "e2fsck", "resize2fs", "losetup", "mount", "cp")
#: no set-uid programs or devices from the guest's disk; no background zeroing of the
#: inode tables (a new disk's are empty) to compete with the server's start
MOUNT_OPTIONS = "loop,nosuid,nodev,noinit_itable"
_template_lock = threading.Lock()


class DiskError(OSError):
    """A server's disk could not be made, mounted or removed."""


def missing_for_disks() -> list[str]:
    """What this host lacks to give servers bounded disks (empty when nothing)."""
    missing = [f"the {tool!r} command" for tool in TOOLS if shutil.which(tool) is None]
    if not Path("/dev/loop-control").exists():
        missing.append("loop devices (/dev/loop-control)")
    return missing


class ServerDisk:
    """The disk mounted on one server's folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.image = folder.parent / f".{folder.name}.disk"

    def attach(self, size_mib: int) -> None:
        """Mount the server's disk on its folder; a new disk gets a copy of the folder's
        files (they stay below it, so the server is known while its disk is not mounted)."""
        if os.path.ismount(self.folder):
            return
        if self.image.exists():
            _run("mount", "-o", MOUNT_OPTIONS, str(self.image), str(self.folder))
            return
        partial = self.image.with_name(self.image.name + ".partial")
        _run("cp", "--sparse=always", str(_template(size_mib)), str(partial))
        below = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            _run("mount", "-o", MOUNT_OPTIONS, str(partial), str(self.folder))
            try:
                _copy_files(below, self.folder)
            except OSError:
                self.detach()
                raise
        except OSError:
            partial.unlink(missing_ok=True)
            raise
        finally:
            os.close(below)
        partial.rename(self.image)  # the loop device follows the file

    def size_mib(self) -> int | None:
        """The disk's size (None when it has none yet)."""
        try:
            return self.image.stat().st_size >> 20
        except FileNotFoundError:
            return None

    def grow(self, size_mib: int) -> None:
        """Make the unmounted disk ``size_mib`` MiB (this kernel refuses to grow a mounted
        ext4 from here); a smaller size is refused."""
        current = self.size_mib()
        if current is None or current == size_mib:
            return
        if size_mib < current:
            raise DiskError(f"a disk cannot shrink (from {current} to {size_mib} MiB)")
        _wait_unused(self.image)
        os.truncate(self.image, size_mib << 20)
        _run("e2fsck", "-f", "-p", str(self.image))  # resize2fs wants a checked disk
        _run("resize2fs", str(self.image))

    def detach(self) -> None:
        """Unmount the disk (its data stays in the image; its loop device goes with the
        mount, which made it with autoclear)."""
        if not os.path.ismount(self.folder):
            return
        try:
            try:  # (the kernel syncs and frees the disk: others' go on meanwhile)
                concurrency.blocking(syscalls.umount, str(self.folder))
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                # still busy: detach it now, it goes when its last user does
                syscalls.umount(str(self.folder), syscalls.MNT_DETACH)
        except OSError as exc:
            raise DiskError(f"umount {self.folder}: {exc.strerror}") from None

    def delete(self) -> None:
        """Unmount the disk and remove its image."""
        self.detach()
        concurrency.blocking(self.image.unlink, True)  # (freeing its blocks takes a while)
        self.image.with_name(self.image.name + ".partial").unlink(missing_ok=True)


def _copy_files(source: int, target: Path) -> None:
    """Copy the files of the folder open as ``source`` into ``target``."""
    for name in os.listdir(source):
        if not stat.S_ISREG(os.stat(name, dir_fd=source, follow_symlinks=False).st_mode):
            raise DiskError(f"{target}/{name} is not a file: a new disk takes only files")
        with open(os.open(name, os.O_RDONLY, dir_fd=source), "rb") as old, \
                open(target / name, "xb") as new:
            shutil.copyfileobj(old, new)


def _wait_unused(image: Path, timeout: float = 10.0) -> None:
    """Wait until no loop device holds ``image`` (a mount namespace made while it was
    mounted, a sandbox's, keeps it until that namespace goes)."""
    deadline = time.monotonic() + timeout
    while True:
        held = subprocess.run(["losetup", "--noheadings", "--output", "NAME",
                               "--associated", str(image)],
                              capture_output=True, text=True, check=False).stdout.split()
        if not held:
            return
        if time.monotonic() > deadline:
            raise DiskError(f"{image} is still in use by {', '.join(held)}")
        time.sleep(0.05)


def _template(size_mib: int) -> Path:
    """The formatted, empty image of ``size_mib`` MiB (made once)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    path = cache / "murano-engine" / "disk-templates" / f"{size_mib}M.ext4"
    with _template_lock:
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
        try:
            with open(partial, "wb") as image:
                image.truncate(size_mib * 1024 * 1024)
            _run("mkfs.ext4", "-q", "-F", "-m", "0",
                 "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", str(partial))
            partial.rename(path)  # another engine may have made it too: either is fine
        finally:
            partial.unlink(missing_ok=True)
    return path


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DiskError(f"{' '.join(command)}: "
                        f"{done.stderr.strip() or f'exit code {done.returncode}'}")
