"""Execution budgets: runaway code and bombs end in a MuranoPL error naming the limit
and the file:line, and the process (the same executor, or a new task) goes on."""

from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path

import pytest
from dsl_helpers import class_text, cli, run_method, write_package
from yaql.language import exceptions as yaql_exceptions

from murano_engine.cli.test_runner import run_test
from murano_engine.dsl import errors
from murano_engine.dsl.budget import MAX_INT_BITS, Budget
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.tasks import run_task

CODE = class_text("t.bud", "Code", """
    Methods:
      wide:
        Body:
          - Return: format('{0:>1500000000}', 1)
      precise:
        Body:
          - Return: format('{0:.1500000000f}', 1.5)
      manyFields:
        Body:
          - Return: format('{0:>400000}{0:>400000}', 1)
      nestedWidth:
        Body:
          - Return: format('{0:>{1}}', 1, 1500000000)
      fine:
        Body:
          - Return: format('{0:>5}|{1:.2f}', 1, 2.5)
      square:
        Body:
          - $x: 3
          - While: 1 = 1
            Do:
              - $x: $x * $x
      power:
        Body:
          - Return: pow(10, 1000000000)
      manyBigStrings:
        Body:
          - $all: range(2000).select(concat('a' * 500000, str($)))
          - Return: len($all)
      replaceChain:
        Body:
          - $s: concat('a' * 57)
          - Return: len($s.replace(a, $s).replace(a, $s).replace(a, $s).replace(a, $s))
      regexReplaceChain:
        Body:
          - $s: concat('a' * 57)
          - Return: len(regex(a).replace(regex(a).replace(regex(a).replace($s, $s), $s), $s))
      dictReplaceChain:
        Body:
          - $s: concat('a' * 57)
          - $d: dict(a => $s)
          - Return: len($s.replace($d).replace($d).replace($d).replace($d))
      repeatList:
        Body:
          - Return: len([1, 2] * 100000000)
      regexTimeouts:
        Body:
          - $text: concat('a' * 45, '!')
          - Return: regex('^(a|aa)+$').matches($text)
      regexFunctions:
        Body:
          - $abcd: 'ab,cd'
          - $digits: 'a1b22'
          - $hello: 'hello'
          - $abc: 'abc'
          - $x9: 'x9'
          - Return:
              - regex('[,;]').split('a,b;c')
              - $abcd.split(',')
              - $digits.replace(regex('[0-9]+'), '#')
              - $hello.replace('l', 'L')
              - regex('([a-z])([0-9])').search('xx a1', $2.value)
              - regex('a.').searchAll('abcadc')
              - $abc.matches('a.c')
              - regex('A.C', ignoreCase => true).matches('xabcx')
              - regex('l').replaceBy($hello, $.value + $.value)
              - $x9 =~ regex('[0-9]')
      deepValue:
        Body:
          - $x: []
          - For: i
            In: range(1000)
            Do:
              - For: j
                In: range(100)
                Do:
                  - $x: [$x]
      smallPowers:
        Body:
          - Return: list(pow(2, 10), pow(2, 100, 1000), pow(2.0, 0.5), 10.pow(3))
      bigRange:
        Body:
          - Return: range(1000000000).toList()
      smallRanges:
        Scope: Public
        Body:
          - Return: list(range(5).len(), range(2, 10, 3).toList(), range(3).select($ * 2).toList())
      lazyRanges:
        Scope: Public
        Body:
          - Return: list(range(1000000000).len(), range(1000000000).where($ > 5).first())
      repeatString:
        Body:
          - Return: len('a' * 1000000000)
      nestedQuantifier:
        Body:
          - Return: (('a' * 34) + '!') =~ '^(a+)+$'
      catastrophic:
        Body:
          - Return: (('a' * 34) + '!') =~ '^(a|aa)+$'
      regexes:
        Body:
          - Return: list('abc' =~ '^a.c$', 'abc' !~ 'x', 'abc' =~ 'x')
      nested:
        Scope: Public
        Body:
          - $n: 0
          - For: i
            In: range(1000)
            Do:
              - For: j
                In: range(1000)
                Do:
                  - $n: $n + 1
          - Return: $n
      emptyLoops:
        Body:
          - $i: 0
          - While: $i < 1000
            Do:
              - $i: $i + 1
              - $j: 0
              - While: ($j + 1) * 0 = 0 and $j < 1000
                Do: []
      lambdas:
        Body:
          - Return: range(1000).select(range(1000).select($).len()).sum()
      forever:
        Body:
          - While: 1 = 1
            Do:
              - $x: 1
      swallow:
        Body:
          - Try:
              - While: 1 = 1
                Do:
                  - $x: 1
            Catch:
              - Do: []
          - Return: caught
      nap:
        Body:
          - sleep(1000000)
          - Return: woke
      shortNap:
        Body:
          - sleep(0.01)
          - Return: woke
      chain:
        Usage: Static
        Arguments:
          - n:
              Contract: $.int()
        Body:
          - $last: null
          - For: i
            In: range($n)
            Do:
              - For: j
                In: range(100)
                Do:
                  - $last: new(Link, next => $last)
          - Return: $last
      dumpChain:
        Usage: Static
        Body:
          - Return: dump(type('t.bud.Code').chain(100))
      checked:
        Usage: Static
        Arguments:
          - rows:
              Contract: [[$.int().check($ >= 0)]]
        Body:
          - Return: len($rows)
      checkMany:
        Body:
          - $row: range(1000).toList()
          - Return: type('t.bud.Code').checked(range(100).select($row))
      fanOut:
        Body:
          - Return: range(2000).pselect(range(2000).pselect(sleep(0)).len()).sum()
      joinBig:
        Body:
          - $b: range(64).select('abcd').join('')
          - $s: range(256).select($b).join('')
          - Return: len(range(2000).select($s).join(','))
      joinBigSeparatorFirst:
        Body:
          - $b: range(64).select('abcd').join('')
          - $s: range(256).select($b).join('')
          - Return: len(','.join(range(2000).select($s)))
""")


LINK = class_text("t.bud", "Link", """
    Properties:
      next:
        Contract: $.class(Link)
""")


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("budgets")
    write_package(root, "t.bud", {"Code": CODE, "Link": LINK})
    return [root]


@pytest.fixture(scope="module")
def loader(pkgs: list[Path]) -> PackageLoader:
    return PackageLoader(pkgs, build_interpreter())


def _fails(loader: PackageLoader, method: str, error: type[BaseException],
           budget: Budget | None = None) -> tuple[BaseException, Executor]:
    """Run ``Code.method``, expect ``error`` at a line of Code.yaml; the executor."""
    executor = Executor(loader, budget=budget)
    with pytest.raises(error) as caught:
        run_method([], f"t.bud.Code.{method}", executor)
    (frame,) = errors.stack_of(caught.value)
    assert (frame.class_name, frame.method) == ("t.bud.Code", method)
    assert frame.position is not None and frame.position.file.endswith("Code.yaml")
    return caught.value, executor


def _healthy(executor: Executor) -> None:
    assert run_method([], "t.bud.Code.fine", executor) == "    1|2.50"


@pytest.mark.parametrize("method", ["wide", "precise", "manyFields", "nestedWidth"])
def test_format_widths_past_the_memory_quota_are_refused(loader: PackageLoader,
                                                         method: str) -> None:
    started = time.monotonic()
    exc, executor = _fails(loader, method, errors.ValueLimitExceededError)
    assert "memory quota" in str(exc)
    assert time.monotonic() - started < 2
    _healthy(executor)


@pytest.mark.parametrize("method", ["replaceChain", "regexReplaceChain", "dictReplaceChain"])
def test_replacements_past_the_memory_quota_are_refused_before_they_are_made(
        loader: PackageLoader, method: str) -> None:
    """Each replacement multiplies the text: the fourth would be 600 MB."""
    exc, executor = _fails(loader, method, yaql_exceptions.MemoryQuotaExceededException)
    _healthy(executor)


def test_repeated_squaring_stops_at_the_integer_size_limit(loader: PackageLoader) -> None:
    exc, executor = _fails(loader, "square", errors.ValueLimitExceededError)
    assert f"{MAX_INT_BITS} bits" in str(exc)
    _healthy(executor)


def test_a_task_past_its_memory_limit_fails_and_its_memory_is_freed(loader: PackageLoader,
                                                                   ) -> None:
    """2,000 strings of 500 KB (1 GB), each within the per-value limits: the process's
    memory is read every 1,000 steps, and the task fails once it grew the process past
    ``task_memory_limit``."""
    from murano_engine.dsl.budget import resident_mb
    before = resident_mb()
    exc, executor = _fails(loader, "manyBigStrings", errors.MemoryBudgetExceededError,
                           Budget(memory_mb=300))
    assert "past the task's memory limit of 300 MB" in str(exc)
    del exc  # its traceback holds what the task built, as a failed task's result does not
    gc.collect()
    executor.budget.release()  # as run_task does at a task's end
    assert resident_mb() < before + 300  # what the task built is gone again
    _healthy(Executor(loader, budget=Budget(memory_mb=300)))


def test_the_memory_limit_is_on_what_a_task_adds_not_what_the_process_holds() -> None:
    """Under murano-api many tasks and forms share a process, which holds on to memory
    another one freed: one project's task left it past every limit for the others."""
    from murano_engine.dsl.budget import resident_mb
    held = bytearray(150 * 1024 * 1024)  # another task's, or memory not given back
    held[::4096] = b"x" * len(held[::4096])  # (touched: resident)
    assert resident_mb() > 150
    Budget(memory_mb=100).checkpoint()  # this task added nothing: within its limit
    del held


def test_a_fan_out_of_green_threads_stops_at_the_memory_limit(pkgs: list[Path]) -> None:
    """4,000,000 branches (pselect in pselect) are made and parked without a step
    counted: the process grew to its address space's end (a raw MemoryError or
    SystemError) without the memory limit being read. Each branch started now counts,
    and once the limit is passed no parked branch starts."""
    import resource
    import subprocess
    import sys

    def small_address_space() -> None:
        limit = 1536 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", "run", "-l", str(pkgs[0]),
         "t.bud.Code.fanOut"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "MURANO_ENGINE_TASK_MEMORY_LIMIT": "100"},
        preexec_fn=small_address_space)  # noqa: PLW1509
    assert done.returncode == 1
    assert "MemoryBudgetExceededError" in done.stderr, done.stderr[-2000:]
    assert "past the task's memory limit of 100 MB" in done.stderr
    assert "t.bud.Code.fanOut at " in done.stderr  # the MuranoPL stack


def test_a_chain_of_objects_is_dumped_in_one_pass_and_refused_when_too_deep(
        pkgs: list[Path]) -> None:
    """10,000 objects, each holding the next and owned by none: every pass of the
    writer walked the whole output again to write one more (minutes, past any time
    budget); now the dump ends at once in the depth limit, and ``run`` does not write
    a result 20,000 levels deep (indented, 1 GB)."""
    dumped = cli("run", "-l", str(pkgs[0]), "t.bud.Code.dumpChain")
    assert dumped.returncode == 1
    assert "ValueLimitExceededError: a value is nested more than 500 levels deep" in \
        dumped.stderr, dumped.stderr[-2000:]
    returned = cli("run", "-l", str(pkgs[0]), "t.bud.Code.chain", "--arg", "n=100")
    assert returned.returncode == 1
    assert returned.stderr.splitlines()[-1] == (
        "error: the result of t.bud.Code.chain nests more than 500 levels deep (a chain "
        "of objects, each holding the next?); it is not written")
    short = cli("run", "-l", str(pkgs[0]), "t.bud.Code.chain", "--arg", "n=1")
    assert short.returncode == 0, short.stderr
    depth, link = 0, json.loads(short.stdout)
    while link is not None:
        depth, link = depth + 1, link["next"]
    assert depth == 100


def test_a_contract_counts_a_step_per_item_it_checks(loader: PackageLoader) -> None:
    """100 lists of 1,000 numbers through ``[[$.int().check($ >= 0)]]``: 100,000 checks
    spent no step, so a budget of 50,000 steps (and the clock, read each 1,000 steps)
    did not stop a loop of such calls."""
    with pytest.raises(errors.StepBudgetExceededError, match="step budget of 50000 steps"):
        run_method([], "t.bud.Code.checkMany", Executor(loader, budget=Budget(steps=50_000)))
    assert run_method([], "t.bud.Code.checkMany", Executor(loader)) == 100


@pytest.mark.parametrize(("method", "error"), [
    # yaql makes ``[1, 2] * 10^8`` (1.6 GB) and only then finds it too big
    ("repeatList", yaql_exceptions.CollectionTooLargeException),
    # 2,000 texts of 64 KiB: 128 MB joined (and only then refused), past the 512 KiB quota
    ("joinBig", yaql_exceptions.MemoryQuotaExceededException),
    ("joinBigSeparatorFirst", yaql_exceptions.MemoryQuotaExceededException),
])
def test_a_value_past_its_limit_is_refused_before_it_is_made(
        loader: PackageLoader, method: str, error: type[BaseException]) -> None:
    import tracemalloc
    tracemalloc.start()
    try:
        _, executor = _fails(loader, method, error)
        assert tracemalloc.get_traced_memory()[1] < 50 * 1024 * 1024
    finally:
        tracemalloc.stop()
    _healthy(executor)


def test_every_regex_function_has_a_time_limit(loader: PackageLoader) -> None:
    """yaql runs patterns with ``re``, which nothing interrupts; ``regex()``, ``matches``,
    ``search``, ``searchAll``, ``split``, ``replace``, ``replaceBy`` and ``=~`` run with a
    timeout instead, and string calls without a pattern still reach yaql."""
    started = time.monotonic()
    exc, executor = _fails(loader, "regexTimeouts", errors.RegexTimeoutError)
    assert "ran longer than" in str(exc) and time.monotonic() - started < 5
    assert run_method([], "t.bud.Code.regexFunctions", executor) == (
        ("a", "b", "c"), ("ab", "cd"), "a#b#", "heLLo", "a", ("ab", "ad"), True, True,
        "hellllo", True)


def test_a_value_nested_past_the_depth_limit_is_refused_at_once(loader: PackageLoader) -> None:
    """100,000 nested lists would cost each assignment a walk of their depth (hours in
    all) and could exhaust the C stack when serialised: refused at 500 levels."""
    started = time.monotonic()
    exc, executor = _fails(loader, "deepValue", errors.ValueLimitExceededError)
    assert "nested more than 500 levels" in str(exc) and time.monotonic() - started < 5
    _healthy(executor)


def test_a_huge_power_is_refused_before_it_is_computed(loader: PackageLoader) -> None:
    started = time.monotonic()
    exc, executor = _fails(loader, "power", errors.ValueLimitExceededError)
    assert "integer power" in str(exc) and time.monotonic() - started < 2
    assert run_method([], "t.bud.Code.smallPowers", executor) == (1024, 376, 2.0 ** 0.5, 1000)


def test_a_huge_range_is_lazy_and_drawing_past_the_limit_is_refused(
        loader: PackageLoader) -> None:
    """As under Murano's yaql: a range is made lazily, its first items may be taken and its
    length is known (at once here: yaql counted it), drawing more than 2000 is refused."""
    exc, executor = _fails(loader, "bigRange", yaql_exceptions.CollectionTooLargeException)
    assert "2000" in str(exc)
    assert run_method([], "t.bud.Code.smallRanges", executor) == (5, (2, 5, 8), (0, 2, 4))
    started = time.monotonic()
    assert run_method([], "t.bud.Code.lazyRanges", executor) == (1000000000, 6)
    assert time.monotonic() - started < 1


def test_string_repetition_stays_within_the_memory_quota(loader: PackageLoader) -> None:
    _, executor = _fails(loader, "repeatString", yaql_exceptions.MemoryQuotaExceededException)
    _healthy(executor)


def test_a_catastrophic_regex_times_out(loader: PackageLoader) -> None:
    started = time.monotonic()
    executor = Executor(loader)
    # The pattern: the regex engine sees the nested quantifier through.
    assert run_method([], "t.bud.Code.nestedQuantifier", executor) is False
    exc, executor = _fails(loader, "catastrophic", errors.RegexTimeoutError)
    assert "^(a|aa)+$" in str(exc) and time.monotonic() - started < 5
    assert run_method([], "t.bud.Code.regexes", executor) == (True, True, False)


@pytest.mark.parametrize("method", ["nested", "emptyLoops", "lambdas"])
def test_nested_loops_under_the_loop_limit_spend_the_step_budget(loader: PackageLoader,
                                                                 method: str) -> None:
    exc, _ = _fails(loader, method, errors.StepBudgetExceededError, Budget(steps=50_000))
    assert "50000 steps" in str(exc)
    # A new task in the same process has a budget of its own.
    assert run_method([], "t.bud.Code.nested", Executor(loader)) == 1_000_000


def test_a_spent_budget_cannot_be_caught_and_ignored(loader: PackageLoader) -> None:
    _fails(loader, "swallow", errors.StepBudgetExceededError, Budget(steps=10_000))


def test_a_busy_loop_spends_the_wall_clock_budget(loader: PackageLoader) -> None:
    started = time.monotonic()
    exc, _ = _fails(loader, "forever", errors.TimeBudgetExceededError, Budget(seconds=0.3))
    assert "wall-clock budget of 0.3 s" in str(exc)
    assert 0.3 <= time.monotonic() - started < 3


def test_sleep_is_capped_by_what_is_left_of_the_budget(loader: PackageLoader) -> None:
    started = time.monotonic()
    _, executor = _fails(loader, "nap", errors.TimeBudgetExceededError, Budget(seconds=0.3))
    assert 0.3 <= time.monotonic() - started < 3
    assert run_method([], "t.bud.Code.shortNap", Executor(loader)) == "woke"


def test_a_task_over_its_configured_budget_fails_cleanly(loader: PackageLoader) -> None:
    config = load_config(environ={"MURANO_ENGINE_TASK_STEP_LIMIT": "5000"})
    model = {"Objects": {"?": {"id": "e1", "type": "t.bud.Code"}}}
    task = {"id": "e1", "model": model, "action": {"object_id": "e1", "method": "nested"}}
    result = run_task(task, loader, budget=Budget.from_config(config))
    assert result["action"]["isException"]
    failure = result["action"]["result"]
    assert failure["names"] == ["murano.dsl.exceptions.StepBudgetExceededError"]
    assert "5000 steps" in failure["message"] and "Code.yaml:" in failure["traceback"]
    assert result["model"]["Objects"]["?"]["id"] == "e1"
    task["action"]["method"] = "smallRanges"
    again = run_task(task, loader, budget=Budget.from_config(load_config(environ={})))
    assert not again["action"]["isException"]


def test_a_test_run_gets_the_configured_budget(loader: PackageLoader) -> None:
    cls = loader.find_class("t.bud.Code")
    config = load_config(environ={"MURANO_ENGINE_TASK_TIME_LIMIT": "0.2"})
    result = run_test(loader, cls, cls.find_method("forever"), config)
    assert result.outcome == "ERROR" and "TimeBudgetExceededError" in result.detail
    assert "Code.yaml:" in result.detail


def test_murano_engine_run_has_a_budget_from_config(pkgs: list[Path]) -> None:
    os.environ["MURANO_ENGINE_TASK_STEP_LIMIT"] = "1000"
    try:
        done = cli("run", "-l", str(pkgs[0]), "t.bud.Code.nested")
    finally:
        del os.environ["MURANO_ENGINE_TASK_STEP_LIMIT"]
    assert done.returncode != 0
    assert "StepBudgetExceededError" in done.stderr and "Code.yaml:" in done.stderr


def test_a_lattice_of_diamonds_is_refused_before_its_init_calls_run(tmp_path: Path) -> None:
    """Each level extends both classes of the one below: the base's .init would run once
    per path, 2**12 times."""
    classes = {"A0": class_text("t.lattice", "A0", """
        Methods:
          .init:
            Body:
              - $x: 1
    """), "B0": class_text("t.lattice", "B0", "Methods: {}\n")}
    for level in range(1, 13):
        for name in "AB":
            classes[f"{name}{level}"] = class_text("t.lattice", f"{name}{level}", f"""
                Extends: [A{level - 1}, B{level - 1}]
            """)
    classes["Run"] = class_text("t.lattice", "Run", """
        Methods:
          run:
            Body:
              - Return: new(A12)
    """)
    write_package(tmp_path, "t.lattice", classes)
    started = time.monotonic()
    with pytest.raises(errors.DslInvalidOperationError,
                       match="the class hierarchy of t.lattice.A12 runs .init more than 1000"):
        run_method([tmp_path], "t.lattice.Run.run")
    assert time.monotonic() - started < 5
