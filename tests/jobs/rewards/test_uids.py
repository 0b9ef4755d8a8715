"""The pool uids and the private directories they are leased in (jobs/rewards/uids.py): a private
directory is tightened, the pool variable checked, and executors never share a uid."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.rewards import uids

pytestmark = pytest.mark.compiler

REPO = Path(__file__).resolve().parents[3]
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="other owners need root to arrange")


def test_the_state_directory_is_private_and_an_own_one_is_tightened(tmp_path: Path) -> None:
    """Created 0700; an own 0711 one (an earlier default others could traverse) is made 0700."""
    fresh = tmp_path / "fresh"
    assert uids.private_dir(fresh) == fresh and (fresh.stat().st_mode & 0o777) == 0o700
    old = tmp_path / "old"
    old.mkdir(mode=0o711)
    os.chmod(old, 0o711)
    uids.private_dir(old)
    assert (old.stat().st_mode & 0o777) == 0o700


HOLD_LEASE = """
import os, sys, tempfile
from jobs.rewards import uids
lease = uids.UidLease()
print(lease.uid, tempfile.gettempdir(), flush=True)
sys.stdin.read()
"""


@root_only
def test_executors_with_different_tmpdirs_never_share_a_uid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lease files under $TMPDIR would let two executors with different TMPDIRs lease the same uid."""
    one_uid = uids.UID_POOL[-1:]
    (tmp_path / "a").mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LEASE],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp_path / "a"),
            uids.UID_POOL_ENV: f"{one_uid.start}:1",
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        uid, tmpdir = holder.stdout.readline().split()
        assert int(uid) == one_uid.start and tmpdir == str(tmp_path / "a")
        monkeypatch.setenv("TMPDIR", str(tmp_path))
        monkeypatch.setattr(uids, "UID_POOL", one_uid)
        with pytest.raises(RuntimeError, match="all 1 sandbox uids are in use"):
            uids.UidLease()
    finally:
        holder.communicate("", timeout=30)


def test_the_uid_pool_variable_is_checked() -> None:
    assert uids.uid_pool_from("2000000:64") == range(2_000_000, 2_000_064)
    assert uids.uid_pool_from(None) == uids.DEFAULT_UID_POOL
    for bad in ("1000:5", "2000000", "x:y", "2000000:0"):
        with pytest.raises(ValueError, match=f"{uids.UID_POOL_ENV}={bad!r}"):
            uids.uid_pool_from(bad)
