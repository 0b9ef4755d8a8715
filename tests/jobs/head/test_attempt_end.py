"""An attempt's end (jobs/head/attempt_end.py): its step lines kept on the runs root while it runs
and at its end (`keep_progress`: a driver on a GPU node loses its log with the node, so the lines
kept last while it ran are what the run's goodput and progress read afterwards), and its failure
read from Ray's job record (`read_failure`), which one dashboard error must not erase."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from jobs.client.api import JobsAPIError
from jobs.head.attempt_end import FAILURE_READS, keep_progress, read_failure
from jobs.head.run_store import RunStore


class _Log:
    """The attempt's log as the probes read it: text, or an error once its node is gone."""

    def __init__(self) -> None:
        self.text = ""
        self.gone = False

    def progress_lines(self, _job_id: str) -> str:
        if self.gone:
            raise RuntimeError("Request failed with status code 500: node gone")
        return self.text


def _port(root: Path, log: _Log) -> SimpleNamespace:
    return SimpleNamespace(store=RunStore(root, "r"), probes=log)


def test_lines_kept_while_running_outlive_the_log(tmp_path):
    log = _Log()
    sup = _port(tmp_path, log)
    log.text = "step:1 - critic/score/mean:0.1\n"
    keep_progress(sup, "r-a1")
    log.text += "step:2 - critic/score/mean:0.2\n"
    keep_progress(sup, "r-a1")
    log.gone = True  # the reclaim: the end reads nothing
    keep_progress(sup, "r-a1")
    assert sup.store.progress("r-a1") == log.text


def test_unchanged_lines_are_not_written_again(tmp_path, monkeypatch):
    log = _Log()
    sup = _port(tmp_path, log)
    log.text = "step:1 - critic/score/mean:0.1\n"
    keep_progress(sup, "r-a1")
    writes: list[str] = []
    monkeypatch.setattr(sup.store, "keep_progress", lambda sid, lines: writes.append(sid))
    keep_progress(sup, "r-a1")
    assert writes == []
    log.text += "step:2 - critic/score/mean:0.2\n"
    keep_progress(sup, "r-a1")
    assert writes == ["r-a1"]


def test_no_runs_root_keeps_nothing_and_raises_nothing(tmp_path):
    log = _Log()
    log.text = "step:1 - critic/score/mean:0.1\n"
    keep_progress(SimpleNamespace(store=None, probes=log), "r-a1")
    assert not any(tmp_path.iterdir())


class _JobRecords:
    """Ray's job record of a failed attempt, behind a dashboard that fails the first reads."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.reads = 0

    def get_job_info(self, _job_id: str) -> SimpleNamespace:
        self.reads += 1
        if self.errors:
            raise self.errors.pop(0)
        return SimpleNamespace(
            driver_exit_code=3,
            message="Job entrypoint command failed with exit code 3, last available logs "
            "(truncated to 20,000 chars):\nValueError: bad config\n",
        )


def _reading(client: _JobRecords, stop_after: int = 99) -> tuple[SimpleNamespace, list[float]]:
    pauses: list[float] = []

    def pause(seconds: float) -> bool:
        pauses.append(seconds)
        return len(pauses) >= stop_after

    sup = SimpleNamespace(client=client, pause=pause, config=SimpleNamespace(poll_s=0.5))
    return sup, pauses


@pytest.mark.parametrize(
    "error",
    [
        JobsAPIError(500, "Internal Server Error"),
        TimeoutError("timed out"),
        ValueError("Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_a_failure_read_that_met_a_dashboard_error_is_read_again(error):
    """One error while a bad config's second failure was read made it unknown, so neither it
    nor the next was compared with a known failure: four attempts instead of two (CI,
    test_handoff.py's crash test under load)."""
    client = _JobRecords(error)
    sup, pauses = _reading(client)
    assert read_failure(sup, "r-a2", "FAILED") == (3, "ValueError: bad config")
    assert client.reads == 2 and pauses == [0.5]


def test_a_failure_stays_unknown_after_every_read_failed():
    client = _JobRecords(*[JobsAPIError(500, "Internal Server Error")] * FAILURE_READS)
    sup, pauses = _reading(client)
    assert read_failure(sup, "r-a2", "FAILED") is None
    assert client.reads == FAILURE_READS and len(pauses) == FAILURE_READS - 1


def test_a_job_ray_no_longer_has_is_not_read_again():
    client = _JobRecords(JobsAPIError(404, "Job r-a2 does not exist"))
    sup, pauses = _reading(client)
    assert read_failure(sup, "r-a2", "FAILED") is None
    assert client.reads == 1 and pauses == []


def test_a_stop_during_the_wait_between_reads_ends_them():
    client = _JobRecords(JobsAPIError(503, "Service Unavailable"))
    sup, pauses = _reading(client, stop_after=1)
    assert read_failure(sup, "r-a2", "FAILED") is None
    assert client.reads == 1


def test_only_a_failed_attempt_has_a_failure_to_read():
    client = _JobRecords()
    sup, _ = _reading(client)
    assert read_failure(sup, "r-a2", "SUCCEEDED") is None and client.reads == 0
