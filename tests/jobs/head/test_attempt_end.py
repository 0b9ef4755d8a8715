"""An attempt's step lines kept on the runs root while it runs and at its end (jobs/head/attempt_end.py
`keep_progress`): a driver on a GPU node loses its log with the node, so the lines kept last
while it ran are what the run's goodput and progress read afterwards."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from jobs.head.attempt_end import keep_progress
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
