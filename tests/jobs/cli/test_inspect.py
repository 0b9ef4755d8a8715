"""`status`'s progress lines (jobs/cli/inspect.py `_print_how_it_goes`), read on views as the
cluster and the runs root give them."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.cli.inspect import _print_how_it_goes


class _Shown:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def print(self, text: str, markup: bool = True) -> None:
        self.lines.append(text)


PROGRESS = {"step": 9, "of": 10, "seconds_per_step": 30.0, "eta_s": 30.0}


def _progress_line(view: dict[str, Any]) -> str:
    shown = _Shown()
    _print_how_it_goes(shown, view)
    return next(line for line in shown.lines if "progress:" in line)


def test_a_running_run_shows_its_eta():
    assert _progress_line({"progress": PROGRESS, "status": "RUNNING"}).endswith("ETA 30 s")


@pytest.mark.parametrize(
    "view",
    [
        {"status": "RUNNING", "outcome": {"event": "finished"}},  # its supervisor's record
        {"status": "SUCCEEDED"},  # an unsupervised job
        {"status": "STOPPED", "outcome": None},
    ],
)
def test_an_ended_run_shows_no_eta(view):
    """A finished run still showed `ETA 0 min`."""
    assert "ETA" not in _progress_line({**view, "progress": PROGRESS})
