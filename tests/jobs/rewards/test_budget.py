"""The executor's memory budget: what its boxes may hold together stays within it.

Three compiles at once held 5 GiB of an 8 GiB pod. The compiles here are real (a macro bomb that
takes g++ about two seconds), counted as the kernel sees them: the `cc1plus` processes this test
process started, read from /proc while they run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards.budget import MemoryBudget
from jobs.rewards.sandbox import (
    COMPILE_BYTES,
    COMPILE_MEMORY,
    COMPILE_TOOLS_AT_ONCE,
    LARGEST_BOX_BYTES,
    Case,
    Executor,
    Limits,
    Status,
)

pytestmark = pytest.mark.compiler

# 4^7 copies of one statement: ~2 s of g++ -O2, under 200 MiB (measured with /usr/bin/time).
BOMB = """
#define A(x) x x x x
#define B(x) A(A(x))
#define C(x) B(B(x))
int main() {{ volatile int s = 0; C(B(A(s += {n};))) return s % 7; }}
"""


def _ours_named(comm: str) -> int:
    """Processes named `comm` that descend from this test process."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        parents[int(entry)], names[int(entry)] = ppid, name
    me = os.getpid()

    def mine(pid: int) -> bool:
        for _ in range(64):
            pid = parents.get(pid, 0)
            if pid == me:
                return True
            if pid <= 1:
                return False
        return False

    return sum(1 for pid, name in names.items() if name == comm and mine(pid))


def _peak_compiles(ex: Executor, sources: list[str]) -> tuple[int, list[bool]]:
    """The most cc1plus processes alive at once while `sources` compile from one thread each."""
    peak = 0
    compiled: list[bool] = []

    def one(code: str) -> None:
        result = ex.run(code, [Case(input="", output="")], Limits(compile_time_s=30))
        compiled.append(result.compiled)

    threads = [threading.Thread(target=one, args=(code,)) for code in sources]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, _ours_named("cc1plus"))
        time.sleep(0.05)
    for t in threads:
        t.join()
    return peak, compiled


@pytest.fixture
def budgeted() -> Iterator[Executor]:
    # The smallest budget allowed: one compile at a time (2 x COMPILE_BYTES does not fit).
    ex = Executor(workers=2, precompile=False, memory_bytes=LARGEST_BOX_BYTES)
    yield ex
    ex.close()


@pytest.fixture
def unbounded() -> Iterator[Executor]:
    ex = Executor(workers=2, precompile=False)
    yield ex
    ex.close()


def test_compiles_wait_for_the_executors_memory_budget(budgeted: Executor) -> None:
    assert 2 * COMPILE_BYTES > LARGEST_BOX_BYTES
    peak, compiled = _peak_compiles(budgeted, [BOMB.format(n=n) for n in (1, 2, 3)])
    assert compiled == [True, True, True]
    assert peak == 1, f"{peak} compiles ran at once within a budget for one"
    # A compile and another solution's test box may run together; never more than the budget.
    assert COMPILE_BYTES <= budgeted.budget.peak <= budgeted.budget.total
    assert budgeted.budget.held == 0


def test_without_a_budget_the_same_compiles_overlap(unbounded: Executor) -> None:
    """The control: the count above can see more than one compile at a time."""
    peak, compiled = _peak_compiles(unbounded, [BOMB.format(n=n) for n in (4, 5, 6)])
    assert compiled == [True, True, True]
    assert peak >= 2


def test_a_compile_holds_at_most_its_share_whatever_the_source(budgeted: Executor) -> None:
    """RLIMIT_AS is per process and g++ -pipe runs three at once: each gets a third, so reading
    /dev/zero (1 GiB in 0.6 s before) ends as a compile error within the compile's share."""
    assert COMPILE_TOOLS_AT_ONCE * (COMPILE_MEMORY // COMPILE_TOOLS_AT_ONCE) <= COMPILE_MEMORY
    started = time.monotonic()
    result = budgeted.run('#include "/dev/zero"\nint main(){}', [], Limits())
    assert not result.compiled and result.compile_error
    assert time.monotonic() - started < 30


def test_tests_queued_past_their_deadline_for_memory_are_not_run() -> None:
    budget = MemoryBudget(100)
    assert budget.acquire(80)
    deadline = time.monotonic() + 0.2
    assert not budget.acquire(40, lambda: time.monotonic() >= deadline)
    budget.release(80)
    assert budget.acquire(40) and budget.held == 40 and budget.peak == 80


def test_a_budget_too_small_for_the_largest_box_is_refused_by_value() -> None:
    with pytest.raises(ValueError, match=f"{LARGEST_BOX_BYTES - 1} bytes"):
        Executor(memory_bytes=LARGEST_BOX_BYTES - 1)
    with pytest.raises(ValueError, match="cannot fit"):
        MemoryBudget(10).acquire(11)


def test_a_run_under_a_budget_still_scores(budgeted: Executor) -> None:
    code = '#include <cstdio>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}'
    result = budgeted.run(code, [Case(input="1 2", output="3")] * 4, Limits())
    assert [r.status for r in result.results] == [Status.passed] * 4
    assert budgeted.budget.held == 0
