"""A pool uid whose processes are gone but not yet reaped: never leased, and a box that cannot start says so.

A flake seen with two suites side by side: a correct program scored 0 with every test
`runtime_error`, exit 127. The lease had taken a uid whose last user (the user-namespace test's
executor, run as that uid) had left three zombie `bwrap`s reparented to the host's PID 1, which
reaped them about 2 s later. The kernel counts a zombie against its uid's RLIMIT_NPROC until it is
reaped, so boxinit's setresuid to that uid with RLIMIT_NPROC 1 set PF_NPROC_EXCEEDED and the
program's execve failed with EAGAIN; boxinit's `_exit(127)` then read as the program's own exit.
Here the zombies are made on purpose: children of this test that it does not reap until the end.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from jobs.rewards import box, uids
from jobs.rewards import code_contests as cc
from jobs.rewards.sandbox import Case, Executor, Limits, Status

pytestmark = [
    pytest.mark.compiler,
    pytest.mark.skipif(os.geteuid() != 0, reason="pool uids and other owners' zombies need root"),
]

SUM = """#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); }"""
CASES = [Case(input="1 2", output="3"), Case(input="2 2", output="4")]
ZOMBIES = 3  # what the flake's uid held: more than a 1-process box's RLIMIT_NPROC


@contextmanager
def zombies_of(uid: int, count: int = ZOMBIES) -> Iterator[list[int]]:
    """`count` exited processes of `uid` that stay unreaped (zombies) until the block ends."""
    children = [
        subprocess.Popen(["/bin/true"], user=uid, group=uid, extra_groups=[]) for _ in range(count)
    ]
    try:
        deadline = time.monotonic() + 30
        while not all(_state(c.pid) == "Z" for c in children):
            assert time.monotonic() < deadline, "the children of the uid did not exit"
            time.sleep(0.01)
        yield [c.pid for c in children]
    finally:
        for child in children:
            child.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/status") as f:
        return next(line.split()[1] for line in f if line.startswith("State:"))


@pytest.fixture
def two_uids(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """This run's last two pool uids as the whole pool, leases trying the first one first."""
    pool = uids.UID_POOL[-2:]
    monkeypatch.setattr(uids, "UID_POOL", pool)
    monkeypatch.setattr(uids.random, "randrange", lambda n: 0)
    return pool[0], pool[1]


def test_a_uid_with_unreaped_zombies_is_not_leased(two_uids: tuple[int, int]) -> None:
    busy, free = two_uids
    with zombies_of(busy):
        lease = uids.UidLease()
        try:
            assert lease.uid == free
        finally:
            assert lease.release()


# Sleeps as the uid, made non-dumpable first (prctl PR_SET_DUMPABLE 0), as a box's program may.
NOT_DUMPABLE = (
    "import ctypes, sys, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)"
)


def test_a_live_process_that_made_itself_not_dumpable_is_still_found(
    two_uids: tuple[int, int],
) -> None:
    """The scans find a uid's tasks by the owner of /proc/PID, which is the task's uid even when
    it is not dumpable (its other /proc files then show root): a kernel that changed this would
    let a lease hand out a uid still in use, and leave its processes alive at release."""
    busy, _free = two_uids
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip(f"needs {python}")
    child = subprocess.Popen(
        [python, "-c", NOT_DUMPABLE],
        user=busy,
        group=busy,
        extra_groups=[],
        stdout=subprocess.PIPE,
        cwd="/",
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert os.stat(f"/proc/{child.pid}/status").st_uid == 0  # not dumpable: root shows
        assert child.pid in uids.live_pids_of_uid(busy)
        assert child.pid in uids.tasks_of_uid(busy)
        lease = uids.UidLease()
        try:
            assert lease.uid != busy
        finally:
            assert lease.release()
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_a_scan_for_a_uid_reads_no_status_file_of_other_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each lease scans the host's processes twice: one stat of /proc/PID each, never a read of
    every status file (the kernel formats it whole, 7 x the cost), which made the two scans ~6 ms
    of every box (bench/reward_throughput.py)."""
    opened: list[str] = []

    def counting_open(path, *args, **kwargs):
        opened.append(str(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(uids, "open", counting_open, raising=False)
    unused = uids.UID_POOL[0]
    assert uids.tasks_of_uid(unused) == [] and uids.live_pids_of_uid(unused) == []
    assert [p for p in opened if p.startswith("/proc/")] == []


def test_a_correct_program_passes_while_a_pool_uid_holds_zombies(
    two_uids: tuple[int, int], executor: Executor
) -> None:
    """The flake's sequence through the executor: before the fix both tests were runtime_error, exit 127."""
    busy, _free = two_uids
    with zombies_of(busy):
        result = executor.run(SUM, CASES, Limits(time_s=5))
    assert [r.status for r in result.results] == [Status.passed, Status.passed], result


def test_a_box_that_cannot_start_its_program_says_why(
    two_uids: tuple[int, int], executor: Executor
) -> None:
    """Handed a uid over its process cap anyway, boxinit reports execve's EAGAIN, not exit 127."""
    busy, _free = two_uids
    spec = box.BoxSpec(
        argv=["/usr/bin/true"],
        cpu_s=5,
        wall_s=30,
        memory_bytes=256 * 2**20,
        processes=1,
        open_files=32,
        file_bytes=2**20,
        disk_bytes=2**20,
    )
    with zombies_of(busy):
        single = box.run_box(
            spec, subprocess.DEVNULL, subprocess.DEVNULL, subprocess.DEVNULL, busy, executor.init
        )
    assert single.code == 127 and single.start_error.startswith("execve: EAGAIN"), single


def test_tests_that_cannot_start_are_a_fault_with_the_reason_not_the_solutions_failure(
    two_uids: tuple[int, int], executor: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a box truly cannot start (here: the lease made blind to the zombies), every test is
    `start_error` with execve's reason and the reward scores FAULT, never `runtime_error`."""
    busy, _free = two_uids
    monkeypatch.setattr(uids, "tasks_of_uid", lambda uid: [], raising=False)
    monkeypatch.setattr(uids, "UID_POOL", range(busy, busy + 1))
    monkeypatch.delenv(cc.SANDBOX_URL_ENV, raising=False)
    warm = executor.run(SUM, CASES[:1], Limits(time_s=5))  # compiled while the uid is clean
    assert warm.results[0].status is Status.passed
    with zombies_of(busy):
        result = executor.run(SUM, CASES, Limits(time_s=5))
        monkeypatch.setattr(cc, "_run_local", lambda *a, **k: result)
        verdict = cc.judge_solution(
            f"```cpp\n{SUM}\n```",
            {"private_tests": {"input": ["1 2", "2 2"], "output": ["3", "4"]}},
        )
    assert [r.status for r in result.results] == [Status.start_error] * 2, result
    assert all("execve: EAGAIN" in r.error for r in result.results), result
    assert verdict.score == cc.FAULT
    assert verdict.reason.startswith("fault: sandbox: 2 of 2 tests could not start: ")
    assert "execve: EAGAIN (Resource temporarily unavailable)" in verdict.reason
