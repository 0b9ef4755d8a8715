"""A run whose attempt's driver died with its GPU node is read by every command, on a real local Ray.

Ray keeps a job's log on its driver's node (the job agent there serves it: job_head.py
`get_job_logs` asks that node's agent and answers HTTP 500 with the traceback when it cannot).
A `run --gpus N` attempt's driver sits on a GPU node, so a spot reclaim takes its log away. From
that moment on, through the capacity wait and the next attempt, and after the run ends, `status`,
`status --json`, `logs`, `logs --tail` and `report` answer (exit 0), say which attempt's log was
lost with its node, and show the run from what is readable.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head.run_store import RunStore
from tests import localray
from tests.jobs.conftest import wait_until
from tests.jobs.gpu_node import GpuNode

pytestmark = pytest.mark.ray

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="3",
    JOBS_SUPERVISOR_PROGRESS_S="5",
    JOBS_SUPERVISOR_MAX_WAIT_S="300",
    JOBS_SUPERVISOR_LEASE_S="3",
    JOBS_SUPERVISOR_GAUGES_S="1",
)
FAST_HEALTH = localray.FAST_HEALTH


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2, extra_env=FAST_HEALTH)
    try:
        yield h
    finally:
        h.stop()


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**FAST, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return result.exit_code, result.stdout, result.stderr


def trainer(marks: Path) -> str:
    """Attempt 1 prints veRL step lines and trains until its node is taken; attempt 2 prints
    three more steps and succeeds."""
    return f"""
import os, sys, time
d = {str(marks)!r}; os.makedirs(d, exist_ok=True)
n = len([f for f in os.listdir(d) if f.startswith("attempt-")])
open(os.path.join(d, f"attempt-{{n}}"), "w").close()
first = 1 if n == 0 else 11
for step in range(first, first + (10 if n == 0 else 3)):
    print(f"step:{{step}} - critic/score/mean:0.{{step % 10}} - timing_s/step:0.2", flush=True)
    time.sleep(0.2)
if n == 0:
    open(os.path.join(d, "trained-0"), "w").close()
    time.sleep(3600)
print("done", flush=True)
"""


def events(root: Path, run: str) -> list[str]:
    return [r["event"] for r in RunStore(root, run).events()]


def read_every_way(url: str, root: Path, run: str, report: Path) -> dict[str, tuple[int, str]]:
    """Every read command on the run, from the cluster and from the runs root."""
    seen: dict[str, tuple[int, str]] = {}
    for label, args in {
        "status": ("status", run, "--address", url),
        "status --json": ("status", run, "--json", "--address", url),
        "logs": ("logs", run, "--address", url),
        "logs --tail": ("logs", run, "--tail", "5", "--address", url),
        "report": ("report", run, "--address", url, "--out", str(report)),
        "status --runs-root": ("status", run, "--runs-root", str(root)),
        "list": ("list", "--address", url),
        "list --json": ("list", "--json", "--address", url),
        "status --runs-root --json": ("status", run, "--json", "--runs-root", str(root)),
    }.items():
        code, out, err = cli(*args)
        seen[label] = (code, out + err)
    return seen


def test_an_attempt_whose_log_died_with_its_node_leaves_the_run_readable(head, tmp_path):
    url = head.dashboard_url
    run = f"lostlog-{uuid.uuid4().hex[:8]}"
    root, marks, report = tmp_path / "runs", tmp_path / "marks", tmp_path / "report.html"
    root.mkdir()
    first = GpuNode(head, gpus=1)
    second = GpuNode(head, gpus=1)
    try:
        first.join()
        code, _, err = cli(
            "run", "--address", url, "--name", run, "--gpus", "1", "--max-restarts", "0",
            "--max-preemptions", "2", "--runs-root", str(root),
            "--", "python", "-c", trainer(marks),
        )  # fmt: skip
        assert code == 0, err
        wait_until(lambda: (marks / "trained-0").exists(), 300, "attempt 1 trained")
        first.stop(grace_s=0)  # a reclaimed spot VM: its raylet, agent and the driver go at once

        # The capacity wait: attempt 1's log went with its node, no attempt 2 yet.
        wait_until(lambda: "preempted" in events(root, run), 120, "the preemption recorded")
        during = read_every_way(url, root, run, report)
        for label, (code, text) in during.items():
            assert code == 0, f"{label} during the wait: {text}"
            assert "status code 500" not in text, f"{label}: {text}"
        for label in ("status", "logs", "logs --tail", "report"):
            assert f"{run}-a1" in during[label][1], (label, during[label][1])
            assert "lost with its node" in during[label][1], (label, during[label][1])
        # About to restart, never FAILED: the cluster's list and the runs root agree.
        row = next(r for r in json.loads(during["list --json"][1]) if r["run"] == run)
        assert row["status"] == "WAITING", row
        assert json.loads(during["status --runs-root --json"][1])["status"] == "WAITING"
        view = json.loads(during["status --json"][1])
        assert list(view["unreadable_logs"]) == [f"{run}-a1"]
        assert "lost with its node" in view["unreadable_logs"][f"{run}-a1"]

        second.join(timeout=180)
        wait_until(lambda: "finished" in events(root, run), 300, "the run's end")
        after = read_every_way(url, root, run, report)
        for label, (code, text) in after.items():
            assert code == 0, f"{label} after the run: {text}"
            assert "status code 500" not in text, f"{label}: {text}"
        assert "lost with its node" in after["logs"][1]
        assert "step:12" in after["logs"][1]  # attempt 2's own log is read as ever
        assert f"{run}-a2 SUCCEEDED" in after["status --runs-root"][1]
        assert report.read_text().count("lost with its node") >= 1
        # The supervisor kept attempt 1's step lines on the runs root while it trained.
        kept = RunStore(root, run).progress(f"{run}-a1")
        assert "step:10 " in kept, kept
    finally:
        first.close()
        second.close()
