"""A run read from its record alone: attempts with their causes, outcome, and "unsupervised"
when the lease lapsed before the run finished."""

from __future__ import annotations

import time

from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import record_view


def _write(store: RunStore, event: str, **fields) -> None:
    store.append(ev.record(event, store.run, fields.pop("message", event), **fields))


def test_attempts_causes_and_unsupervised_after_the_lease_lapses(tmp_path):
    store = RunStore(tmp_path, "r")
    lease = store.acquire("r-s1", ttl_s=0.2)
    store.write_spec({"run": "r"})
    _write(store, ev.SUBMITTED, attempt=1, submission_id="r-a1", supervisor="r-s1")
    _write(store, ev.ATTEMPT_ENDED, attempt=1, submission_id="r-a1", status="FAILED")
    _write(store, ev.PREEMPTED, attempt=1, submission_id="r-a1", message="node x died")
    _write(store, ev.SUBMITTED, attempt=2, submission_id="r-a2", supervisor="r-s1")
    v = record_view.view(tmp_path, "r")
    assert v["status"] == "RUNNING" and lease is not None
    assert [(a["submission_id"], a["status"], a["cause"]) for a in v["attempts"]] == [
        ("r-a1", "FAILED", "preempted"),
        ("r-a2", "RUNNING", None),
    ]
    time.sleep(0.3)
    v = record_view.view(tmp_path, "r")
    assert v["status"] == record_view.UNSUPERVISED
    text = "\n".join(record_view.lines(v))
    assert "unsupervised: r-s1 last renewed its lease" in text
    assert "r-a1 FAILED (preempted)" in text


def test_a_finished_run_is_not_unsupervised(tmp_path):
    store = RunStore(tmp_path, "r")
    store.release(store.acquire("r-s1", ttl_s=60))
    _write(store, ev.GAVE_UP, reason="crash", message="gave up: crash")
    v = record_view.view(tmp_path, "r")
    assert v["status"] == "FAILED" and v["outcome"]["reason"] == "crash"
    assert [row["run"] for row in record_view.listing(tmp_path)] == ["r"]


def test_a_live_supervisor_before_its_first_attempt_is_waiting_as_the_cluster_says(tmp_path):
    """The runs root said SUPERVISED where the cluster's view said WAITING."""
    store = RunStore(tmp_path, "r")
    store.acquire("r-s1", ttl_s=60)
    store.write_spec({"run": "r"})
    _write(store, ev.ARMED, fresh=True, supervisor="r-s1")
    _write(store, ev.WAITING, supervisor="r-s1")
    assert record_view.view(tmp_path, "r")["status"] == record_view.WAITING
    _write(store, ev.SUBMITTED, attempt=1, submission_id="r-a1", supervisor="r-s1")
    assert record_view.view(tmp_path, "r")["status"] == "RUNNING"
