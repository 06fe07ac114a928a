"""Whole files read with few system calls, as ``open(path, "rb").read()`` reads them."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from murano_engine.dsl.files import read_bytes


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_000])
def test_a_file_reads_whole(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    assert read_bytes(str(path)) == path.read_bytes()


def test_a_file_whose_size_the_kernel_does_not_know_reads_whole() -> None:
    # /proc files stat as empty: the short first read is not taken for the end
    with open("/proc/self/maps", "rb") as stream:
        expected_start = stream.readline()
    text = read_bytes("/proc/self/maps")
    assert len(text) > 1000 and text.startswith(expected_start[:12])


def test_a_folder_or_a_missing_file_raises_as_open_does(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_bytes(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_bytes(str(tmp_path / "missing"))


def test_a_symlink_is_refused_when_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert read_bytes(str(tmp_path / "link")) == b"data"
    with pytest.raises(OSError) as caught:
        read_bytes(str(tmp_path / "link"), follow_symlinks=False)
    assert caught.value.errno == errno.ELOOP
