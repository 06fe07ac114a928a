"""Time, sleep, random names and ids pass through ``murano_engine.dsl.boundary``."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from dsl_helpers import class_text, run_method, write_package

from murano_engine.dsl import boundary

CODE = class_text("t.bnd", "Code", """
    Methods:
      run:
        Body:
          - $child: new(Code)
          - sleep(2.5)
          - sleep(0)
          - Return: [randomName(), randomName(), id($child), id($this)]
""")


class RecordingOutside(boundary.Outside):
    """A deterministic boundary that records what a journal would."""

    def __init__(self) -> None:
        super().__init__()
        self.journal: list[tuple[str, object]] = []
        self.ids = 0
        self.names = 0

    def now(self) -> float:
        return 1_000_000.0

    def monotonic(self) -> float:
        return 5.0

    def sleep(self, seconds: float) -> None:
        self.journal.append(("sleep", seconds))

    def new_id(self) -> str:
        self.ids += 1
        value = f"{self.ids:032x}"
        self.journal.append(("id", value))
        return value

    def random_name(self) -> str:
        self.names += 1
        value = f"name{self.names}"
        self.journal.append(("name", value))
        return value


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("boundary")
    write_package(root, "t.bnd", {"Code": CODE})
    return [root]


def run_recorded(pkgs: list[Path]) -> tuple[object, list]:
    with boundary.use(RecordingOutside()) as fake:
        result = run_method(pkgs, "t.bnd.Code.run")
    return result, fake.journal


def test_a_fake_outside_makes_names_ids_and_sleep_deterministic(pkgs: list[Path]) -> None:
    first, journal = run_recorded(pkgs)
    second, again = run_recorded(pkgs)
    assert first == second == ("name1", "name2", f"{2:032x}", f"{1:032x}")
    assert journal == again
    assert [entry for entry in journal if entry[0] == "sleep"] == [("sleep", 2.5), ("sleep", 0.0)]
    assert journal == [("id", f"{1:032x}"), ("id", f"{2:032x}"), ("sleep", 2.5), ("sleep", 0.0),
                       ("name", "name1"), ("name", "name2")]


def test_use_restores_the_previous_boundary() -> None:
    before = boundary.outside()
    fake = RecordingOutside()
    with boundary.use(fake):
        assert boundary.outside() is fake
        with boundary.use(RecordingOutside()) as inner:
            assert boundary.outside() is inner
        assert boundary.outside() is fake
    assert boundary.outside() is before
    with pytest.raises(RuntimeError):
        with boundary.use(fake):
            raise RuntimeError("boom")
    assert boundary.outside() is before


def test_the_live_outside_makes_unique_names_and_ids() -> None:
    live = boundary.Outside()
    names = {live.random_name() for _ in range(200)}
    assert len(names) == 200
    assert all(re.fullmatch(r"[a-z]{5}[0-9a-z]+", n) for n in names)
    ids = {live.new_id() for _ in range(200)}
    assert len(ids) == 200 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    # random (version 4) UUIDs of RFC 4122's variant, as Murano's ids
    assert all(uuid.UUID(hex=i).version == 4 and uuid.UUID(hex=i).variant == uuid.RFC_4122
               for i in ids)
    assert len(live.random_string(12, "ab")) == 12


def test_random_name_uses_the_boundary_clock() -> None:
    class Frozen(boundary.Outside):
        def now(self) -> float:
            return 0.0

    name = Frozen().random_name()
    assert name[5:] == "01"  # base-36 stamp 0, counter 1


def test_services_come_from_the_boundary() -> None:
    outside = boundary.Outside({"cloud": "the cloud"})
    assert outside.service("cloud") == "the cloud"
    with pytest.raises(LookupError, match="agents"):
        outside.service("agents")


def test_nothing_in_the_interpreter_calls_time_random_or_uuid_directly() -> None:
    dsl = Path(boundary.__file__).parent  # murano_engine/dsl, the boundary itself excepted
    forbidden = re.compile(r"^\s*(import|from)\s+(time|random|uuid|secrets)\b|"
                           r"\b(time\.(time|sleep|monotonic)|uuid\.uuid4|random\.\w+)\(",
                           re.MULTILINE)
    modules = [p for p in dsl.rglob("*.py") if p.name != "boundary.py"]
    assert len(modules) > 20
    offenders = [str(p) for p in modules if forbidden.search(p.read_text())]
    assert offenders == []


def test_the_live_worlds_ids_are_random_version_4_uuids() -> None:
    import uuid
    ids = [boundary.Outside().new_id() for _ in range(200)]
    assert len(set(ids)) == 200
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert (parsed.hex, parsed.version, parsed.variant) == (text, 4, uuid.RFC_4122)
