"""Supervisor records: written as one JSON line each, read back from a log with Ray's own lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobs.head import events as ev


@given(st.text(), st.integers(1, 99))
def test_a_record_round_trips_through_a_log_with_other_lines(message, attempt):
    log = "\n".join(
        [
            "2026-12-01 INFO job_manager.py -- Runtime env is setting up.",
            ev.line(ev.WAITING, "r1", message, attempt=attempt, gpus_needed=2),
            "Traceback (most recent call last):",
        ]
    )
    [record] = ev.parse(log)
    assert (record["event"], record["run"], record["message"], record["attempt"]) == (
        ev.WAITING,
        "r1",
        message,
        attempt,
    )
    assert ev.human(record).endswith(f"waiting a{attempt}: {message}")


def test_a_cut_line_is_skipped_not_fatal():
    whole = ev.line(ev.ARMED, "r1", "ok")
    assert [r["event"] for r in ev.parse(whole[:-5] + "\n" + whole)] == [ev.ARMED]
