"""How often boxinit sums a box's CPU time: rarely while no limit is near, soon enough when one is.

Each check lists the box's /proc and reads the stat file of each of its processes; at a fixed
8 ms a 0.3 s compile was checked ~45 times. The pause now grows to 64 ms while the CPU time left
(over the processes that can run at once) and the idle and wall deadlines are further than that,
so a program is still stopped within 8 ms of its limit: the overshoot measured the same, 0.517 s
and 0.533 s CPU for one and three burners under a 0.5 s limit, before and after.
"""

from __future__ import annotations

import subprocess

import pytest

from jobs.rewards import box, uids
from jobs.rewards.sandbox import Executor

pytestmark = pytest.mark.compiler


def _run(executor: Executor, argv: list[str], cpu_s: float, processes: int) -> box.BoxExit:
    spec = box.BoxSpec(
        argv=argv,
        cpu_s=cpu_s,
        wall_s=60,
        memory_bytes=256 * 2**20,
        processes=processes,
        open_files=32,
        file_bytes=2**20,
        disk_bytes=2**20,
    )
    with uids.Leased(executor.privileged) as lease:
        return box.run_box(
            spec,
            subprocess.DEVNULL,
            subprocess.DEVNULL,
            subprocess.DEVNULL,
            lease.uid,
            executor.init,
        )


def test_a_box_far_from_its_limits_is_checked_rarely(executor: Executor) -> None:
    """0.5 s asleep under a 30 s CPU limit (a compile's): ~15 checks, not the ~65 of a fixed 8 ms."""
    ex = _run(executor, ["/usr/bin/sleep", "0.5"], cpu_s=30, processes=4)
    assert ex.code == 0 and not ex.start_error, ex
    assert 5 <= ex.polls <= 25, ex


@pytest.mark.parametrize("burners", [1, 3])
def test_a_cpu_burner_is_still_stopped_right_past_its_limit(
    executor: Executor, burners: int
) -> None:
    """Longer pauses never let a box run far past its CPU limit: it is checked again before the
    CPU time left could be spent by the processes it may run at once."""
    loop = "while :; do :; done"
    script = f"({loop}) & " * (burners - 1) + loop
    ex = _run(executor, ["/bin/sh", "-c", script], cpu_s=0.5, processes=burners + 1)
    assert ex.cpu_s > 0.5, ex
    # ticks of 10 ms per process (USER_HZ) and one 8 ms pause per process that can run at once
    assert ex.cpu_s < 0.5 + 0.1, ex
