"""A solution's tests in one box, each a fresh limited process (a box per test cost 12 x a
bare fork/exec). Walls between a solution's own tests are not needed; limits are, and nothing of a
test may run into the next: its processes, its CPU time, the files of the other tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import box
from jobs.rewards.sandbox import Case, Executor, Limits, Status, chunks
from tests.jobs.rewards.attacks import MANY_FILES

pytestmark = pytest.mark.compiler

# Test 1 leaves a child that writes a marker 0.2 s later; test 2 looks for the marker after 0.5 s.
LEFTOVER = r"""
#include <cstdio>
#include <unistd.h>
int main() {
    if (access("/box/started", F_OK) != 0) {
        fclose(fopen("/box/started", "w"));
        if (fork() == 0) { setsid(); usleep(200000); fclose(fopen("/box/marker", "w")); return 0; }
        puts("clean");
        return 0;
    }
    usleep(500000);
    puts(access("/box/marker", F_OK) == 0 ? "leak" : "clean");
}
"""

# 0.6 CPU-s per test under a 1 s limit: the second test passes only if its CPU time is its own.
BURN = r"""
#include <cstdio>
#include <ctime>
int main() {
    volatile unsigned long x = 0;
    while (clock() < CLOCKS_PER_SEC * 6 / 10) x++;
    puts("done");
}
"""

# What a test can reach: its own stdin, stdout and stderr, no other descriptor; boxinit's (the
# holder of every test's files) closed to it.
REACH = r"""
#include <cstdio>
#include <dirent.h>
#include <cstdlib>
#include <unistd.h>
int main() {
    int extra = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; (e = readdir(d));) { int fd = atoi(e->d_name); if (fd > 2 && fd != dirfd(d)) extra++; }
    closedir(d);
    int peek = 0;
    for (int pid = 1; pid <= 3; pid++) {
        if (pid == getpid()) continue;
        char path[64]; snprintf(path, sizeof path, "/proc/%d/fd", pid);
        DIR *p = opendir(path); if (p) { peek++; closedir(p); }
    }
    int a, b; if (scanf("%d %d", &a, &b) != 2) return 1;
    printf("%d %d %d\n", extra, peek, a + b);
}
"""


@pytest.fixture(scope="module")
def one_worker() -> Iterator[Executor]:
    """One worker: a solution's tests share one box."""
    ex = Executor(workers=1, precompile=False)
    yield ex
    ex.close()


def test_a_tests_leftover_process_never_runs_into_the_next(one_worker: Executor) -> None:
    result = one_worker.run(
        LEFTOVER,
        [Case(input="", output="clean")] * 2,
        Limits(time_s=1, processes=2, wall_margin_s=2),
    )
    assert [r.status for r in result.results] == [Status.passed] * 2, result


def test_each_tests_cpu_time_is_its_own(one_worker: Executor) -> None:
    result = one_worker.run(BURN, [Case(input="", output="done")] * 3, Limits(time_s=1))
    assert [r.status for r in result.results] == [Status.passed] * 3, result
    assert all(0.5 < r.cpu_s < 1.0 for r in result.results), result


def test_a_test_reaches_only_its_own_input_and_output(one_worker: Executor) -> None:
    cases = [Case(input=f"{i} {i}", output=f"0 0 {2 * i}") for i in range(4)]
    result = one_worker.run(REACH, cases, Limits(time_s=1))
    assert [r.status for r in result.results] == [Status.passed] * 4, result


def test_a_time_limit_in_one_test_leaves_the_others_judged(one_worker: Executor) -> None:
    loop_on_2 = (
        '#include <cstdio>\nint main(){int n; scanf("%d",&n); if(n==2) for(;;); printf("%d\\n",n);}'
    )
    cases = [Case(input=str(i), output=str(i)) for i in range(1, 4)]
    result = one_worker.run(loop_on_2, cases, Limits(time_s=0.5))
    statuses = [r.status for r in result.results]
    assert statuses == [Status.passed, Status.time_limit, Status.passed], result


@pytest.mark.parametrize(
    ("n", "workers", "per_box", "boxes"),
    [
        (0, 2, 8, 0),
        (1, 4, 8, 1),
        (7, 3, 1, 3),
        (8, 2, 8, 1),
        (9, 2, 8, 2),
        (200, 4, 8, 4),
        (600, 1, 8, 3),
    ],  # fmt: skip
)
def test_tests_split_into_contiguous_runs_in_order_none_too_short(
    n: int, workers: int, per_box: int, boxes: int
) -> None:
    cases = [Case(input=str(i), output="") for i in range(n)]
    runs = chunks(cases, workers, per_box)
    assert [c for run in runs for c in run] == cases
    assert len(runs) == boxes
    assert not runs or max(map(len, runs)) - min(map(len, runs)) <= 1


def test_a_box_creates_no_more_files_than_its_inode_bound(one_worker: Executor) -> None:
    """bwrap's tmpfs has no inode bound; 200,000 empty files fit in 16 MiB. boxinit
    remounts /box with nr_inodes (the user-namespace mode's run: test_sandbox.py)."""
    limits = Limits(time_s=5, wall_margin_s=10)
    result = one_worker.run(MANY_FILES, [Case(input="", output="bounded")], limits)
    (r,) = result.results
    assert r.status is Status.passed, r
    # Nothing is mounted outside the box for it (the bound lives in the box's own namespace).
    assert str(one_worker._dir) not in Path("/proc/self/mounts").read_text()


def test_the_inode_bound_follows_the_box_size() -> None:
    assert box.box_inodes(16 * 2**20) == 4096
    assert box.box_inodes(2**20) == 256
    assert box.box_inodes(0) == box.BOX_INODES_MIN
    assert box.box_inodes(2**40) == box.BOX_INODES_MAX


def test_more_tests_than_a_reports_pipe_holds_are_all_judged(one_worker: Executor) -> None:
    """boxinit reports a line per test into a pipe read after the box: some 600 lines in one box
    would fill it (64 KiB: a box of 1,500 blocked here) and stall boxinit until the box's backstop."""
    code = '#include <cstdio>\nint main(){int n; scanf("%d",&n); printf("%d\\n",n);}'
    cases = [Case(input=str(i), output=str(i)) for i in range(1500)]
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(one_worker.run(code, cases, Limits())))
    worker.start()
    worker.join(120)
    assert done, "1,500 tests were not judged within 120 s"
    (result,) = done
    assert result.passed == 1500, result.results[:3]
