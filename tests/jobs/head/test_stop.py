"""`python -m jobs.head.stop`: what the stop job writes in a run's record."""

from __future__ import annotations

import time

import pytest

from jobs.head import events as ev
from jobs.head import stop
from jobs.head.run_store import RunStore
from jobs.runs import run_goodput


@pytest.fixture(autouse=True)
def _not_in_a_ray_job(monkeypatch):
    """`main` ends attempts through the cluster only inside a Ray job (RAY_ADDRESS set)."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def _store(root, lease_s: float) -> RunStore:
    store = RunStore(root, "r")
    store.write_spec({"run": "r"})
    store.acquire("r-s1", ttl_s=lease_s)
    time.sleep(0.01)  # a lease of a millisecond has lapsed
    store.append(ev.record(ev.SUBMITTED, "r", "submitted", attempt=1, submission_id="r-a1"))
    return store


def _events(store: RunStore) -> list[str]:
    return [r["event"] for r in store.events()]


def test_with_a_live_supervisor_only_the_request_is_written(tmp_path):
    store = _store(tmp_path, 3600)
    assert stop.main(["r", "--runs-root", str(tmp_path)]) == 0
    assert _events(store)[-1] == ev.STOP_REQUESTED  # the supervisor writes the end


def test_with_no_supervisor_holding_the_run_the_stop_is_its_end(tmp_path):
    store = _store(tmp_path, 0.001)
    assert stop.main(["r", "--runs-root", str(tmp_path)]) == 0
    assert _events(store)[-2:] == [ev.STOP_REQUESTED, ev.STOPPED]
    assert ev.outcome(store.events())["event"] == ev.STOPPED


def test_a_run_that_already_ended_is_left_as_it_is(tmp_path):
    store = _store(tmp_path, 0.001)
    store.append(ev.record(ev.FINISHED, "r", "run r succeeded"))
    before = _events(store)
    assert stop.main(["r", "--runs-root", str(tmp_path)]) == 0
    assert _events(store) == before


def test_a_stop_with_no_supervisor_drops_the_runs_gpu_request(tmp_path):
    store = RunStore(tmp_path, "r")
    store.write_spec({"run": "r", "request_gpus": True})
    store.acquire("r-s1", ttl_s=0.001)
    time.sleep(0.01)  # lapsed
    dropped: list[str] = []
    stop.record_stop(store, "rl-jobs stop", dropped.append)
    assert dropped == ["r"]
    assert ev.outcome(store.events())["event"] == ev.STOPPED


def test_a_stop_with_a_live_supervisor_leaves_the_release_to_it(tmp_path):
    store = RunStore(tmp_path, "r")
    store.write_spec({"run": "r", "request_gpus": True})
    store.acquire("r-s1", ttl_s=3600)
    dropped: list[str] = []
    stop.record_stop(store, "rl-jobs stop", dropped.append)
    assert dropped == []


def test_a_stop_after_the_supervisor_died_ends_the_run_before_its_lease_lapses(tmp_path):
    """A supervisor killed a moment before `stop` leaves a lease that has not
    lapsed; the stop wrote only its request, and the run read UNSUPERVISED ("the re-armer takes
    the run back") for good, though nothing would ever write its end."""
    store = _store(tmp_path, 3600)
    assert stop.main(["r", "--runs-root", str(tmp_path), "--supervisor-gone"]) == 0
    assert _events(store)[-2:] == [ev.STOP_REQUESTED, ev.STOPPED]
    assert ev.outcome(store.events())["event"] == ev.STOPPED


def test_a_stop_with_no_supervisor_ends_when_its_attempts_ended_on_ray(tmp_path):
    """With no supervisor to record its attempt's end, the stop ends the attempts that have no
    end on the record and records the end Ray gives: the runs root then tells the life the
    cluster's job table does (a trainer takes seconds to exit after SIGTERM)."""
    store = _store(tmp_path, 0.001)
    store.append(ev.record(ev.ATTEMPT_ENDED, "r", "ended", attempt=1, submission_id="r-a1"))
    store.append(ev.record(ev.SUBMITTED, "r", "submitted", attempt=2, submission_id="r-a2"))
    asked: list[list[str]] = []

    def end_attempts(sids: list[str]) -> int:
        asked.append(sids)
        return 1_700_000_123_456

    stop.record_stop(store, "rl-jobs stop", lambda _run: None, end_attempts=end_attempts)
    assert asked == [["r-a2"]]
    final = ev.outcome(store.events())
    assert final["event"] == ev.STOPPED
    assert run_goodput.record_ms(final) == 1_700_000_123_456


def test_a_stop_with_a_live_supervisor_leaves_the_attempts_to_it(tmp_path):
    store = _store(tmp_path, 3600)
    asked: list[list[str]] = []
    stop.record_stop(store, "rl-jobs stop", lambda _run: None, end_attempts=asked.append)
    assert asked == []


def test_a_stop_on_another_head_than_the_live_holders_leaves_the_end_to_it(tmp_path):
    """Two heads on one runs root: a stop job on head B finds no supervisor of the run in B's
    job table, but the live lease names head A: its supervisor lives there for all B can tell,
    and it writes the end (and stops its attempts, which B's Ray cannot)."""
    store = RunStore(tmp_path, "r")
    store.write_spec({"run": "r"})
    store.acquire("r-s1", ttl_s=3600, head="session_a")
    dropped: list[str] = []
    stop.record_stop(store, "rl-jobs stop", dropped.append, supervisor_gone=True, head="session_b")
    assert _events(store)[-1] == ev.STOP_REQUESTED and not dropped
    stop.record_stop(store, "rl-jobs stop", dropped.append, supervisor_gone=True, head="session_a")
    assert _events(store)[-1] == ev.STOPPED  # its own head's job table is the one to believe
