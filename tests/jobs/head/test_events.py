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


def test_a_record_is_stamped_by_the_writers_clock_when_given():
    """The supervisor stamps records with its Clock (simulated in tests/jobs/head/sim), so goodput
    reads the simulated time, not the wall clock of the machine running the simulation."""
    assert ev.record(ev.ARMED, "r1", "ok", at=1_800_000_000.0)["t"] == "2027-01-15T08:00:00Z"
    import re

    wall = ev.record(ev.ARMED, "r1", "ok")["t"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", wall), wall
