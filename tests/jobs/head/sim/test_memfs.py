"""The simulation's in-memory runs root keeps the contract of the real one (jobs/head/files.py),
so the run store behaves the same on both: the same assertions run against each."""

from __future__ import annotations

import pytest

from jobs.head.files import LOCAL
from jobs.head.run_store import RunStore, runs
from tests.jobs.head.sim.memfs import MemFiles


@pytest.fixture(params=["posix", "memory"])
def files(request):
    return LOCAL if request.param == "posix" else MemFiles(lambda: 1_800_000_000.0)


def test_the_file_operations_keep_one_contract(files, tmp_path):
    d = tmp_path / "a" / "b"
    with pytest.raises(OSError):
        files.listdir(d)
    with pytest.raises(OSError):
        files.read_text(d / "x")
    files.makedirs(d)
    files.create_exclusive(d / "lease.1")
    with pytest.raises(FileExistsError):  # O_EXCL: one creator wins
        files.create_exclusive(d / "lease.1")
    assert files.read_text(d / "lease.1") == ""
    files.write_atomic(d / "lease.1", "new")
    assert files.read_text(d / "lease.1") == "new"
    files.append(d / "log", b"one\n")
    files.append(d / "log", b"two\n")
    assert files.read_text(d / "log") == "one\ntwo\n"
    assert sorted(files.listdir(d)) == ["lease.1", "log"]
    assert files.listdir(tmp_path / "a") == ["b"] and files.is_dir(d)
    assert files.is_file(d / "log") and not files.is_file(d)
    files.unlink(d / "lease.1")
    files.unlink(d / "lease.1")  # already gone: nothing
    assert files.listdir(d) == ["log"]
    assert files.mtime(d / "log") > 0


def test_the_run_store_reads_back_what_it_wrote_on_either(files, tmp_path):
    a = RunStore(tmp_path, "r", files=files)
    a.append({"event": "armed"})
    a.write_spec({"run": "r"})
    lease = a.acquire("r-s1", ttl_s=1e9)
    assert lease is not None and lease.gen == 1
    assert RunStore(tmp_path, "r", files=files).acquire("r-s2", ttl_s=60) is None
    assert runs(tmp_path, files) == ["r"]
    assert [r["event"] for r in a.events()] == ["armed"] and a.spec() == {"run": "r"}


def test_a_full_disk_changes_nothing(tmp_path):
    files = MemFiles(lambda: 0.0)
    store = RunStore(tmp_path, "r", files=files)
    store.write_spec({"run": "r"})
    files.full = True
    with pytest.raises(OSError, match="No space"):
        store.write_spec({"run": "other"}, replace=True)
    with pytest.raises(OSError):
        store.append({"event": "armed"})
    assert store.spec() == {"run": "r"} and store.events() == []


def test_a_create_without_o_excl_opens_what_exists_and_with_it_fails(tmp_path):
    """The in-memory root honours the flags the run store asks for, so a run store that lost
    O_EXCL (a planted bug of tests/jobs/head/sim/mutants/) wins races here as it would on Lustre."""
    import os

    files = MemFiles(lambda: 0.0)
    files.makedirs(tmp_path)
    files.write_atomic(tmp_path / "lease.1", "held")
    files.create(tmp_path / "lease.1", os.O_WRONLY | os.O_CREAT)
    assert files.read_text(tmp_path / "lease.1") == "held"
    with pytest.raises(FileExistsError):
        files.create(tmp_path / "lease.1", os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def test_two_takers_interleaved_between_read_and_create_have_one_winner(tmp_path):
    """The rival takes the lease between the first taker's read of the lapsed lease and its
    create: the first taker's create fails and it gets nothing."""
    files = MemFiles(lambda: 0.0)
    first, rival = RunStore(tmp_path, "r", files=files), RunStore(tmp_path, "r", files=files)
    won: list[object] = []

    def between(_path) -> None:
        files.before_create = None
        won.append(rival.acquire("r-s2", ttl_s=60))

    files.before_create = between
    assert first.acquire("r-s2-other", ttl_s=60) is None
    assert won and won[0] is not None and first.lease().holder == "r-s2"
