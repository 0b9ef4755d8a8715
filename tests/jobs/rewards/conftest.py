"""Each copy of the rewards suite runs its boxes on pool uids of its own.

A copy of this suite (another checkout, another CI job on the machine) takes a slice of pool uids
no other copy holds (an flock in uids.LEASE_DIR, kept for the session) and leases only from it, so
"no process of the pool is left" judges only what this copy started.
The slices lie above uids.DEFAULT_UID_POOL, away from real executors on the machine.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import uids
from jobs.rewards.sandbox import Executor

SLICE_UIDS = 64
SLICES = 256
_held: list[int] = []


def _claim_uid_slice() -> range:
    folder = uids._lease_dir()
    for k in range(SLICES):
        fd = os.open(folder / f"test-slice-{k}", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _held.append(fd)
        start = uids.DEFAULT_UID_POOL.stop + k * SLICE_UIDS
        return range(start, start + SLICE_UIDS)
    raise RuntimeError(f"all {SLICES} test uid slices are held by other copies of the suite")


def pytest_configure(config: pytest.Config) -> None:
    if os.geteuid() == 0 and not _held:
        uids.UID_POOL = _claim_uid_slice()
        os.environ[uids.UID_POOL_ENV] = f"{uids.UID_POOL.start}:{len(uids.UID_POOL)}"


@pytest.fixture
def executor(tmp_path: Path) -> Iterator[Executor]:
    """A one-worker executor of the test's own, closed after it."""
    ex = Executor(workers=1, root=tmp_path / "rl-sandbox", precompile=False)
    try:
        yield ex
    finally:
        ex.close()
