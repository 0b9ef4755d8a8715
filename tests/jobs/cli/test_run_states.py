"""`list`, `status`, `logs` and `stop` agree on a run's state, read from Ray or from the runs root.

One table over the states a supervised run goes through (waiting, running,
unsupervised, succeeded, gave up, stopped, resumed), each brought about on a real local Ray by the
CLI itself, then read by every command from both sources. The two sources use their own words
(Ray shows the latest attempt's status beside its supervisor's; the record says whether a
supervisor holds the run), so the table names both, and within a source `list` and `status` must
say the same.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import ray  # noqa: F401  (makes Ray's vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy
from ray.job_submission import JobSubmissionClient
from typer.testing import CliRunner

from jobs.cli.app import app
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="1",
    JOBS_SUPERVISOR_PROGRESS_S="2",
    JOBS_SUPERVISOR_MAX_WAIT_S="600",
    # Long enough that a loaded machine (two suites side by side) never lets a live supervisor's
    # lease lapse between renewals (every third of it), short enough to see a killed one's go.
    JOBS_SUPERVISOR_LEASE_S="10",
)
SLEEPER = ["python", "-c", "import time; print('training', flush=True); time.sleep(300)"]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**FAST, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return result.exit_code, result.stdout, result.stderr


class Cluster:
    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.client = JobSubmissionClient(url)

    def run(self, name: str, *flags: str, command: list[str] = SLEEPER) -> None:
        code, _, err = cli(
            "run", "--address", self.url, "--name", name, "--runs-root", str(self.root), *flags,
            "--", *command,
        )  # fmt: skip
        assert code == 0, err

    def status(self, name: str, *source: str) -> dict[str, Any]:
        code, out, err = cli("status", name, *source, "--json")
        assert code == 0, err
        return json.loads(out)

    def row(self, name: str, *source: str) -> dict[str, Any]:
        code, out, err = cli("list", *source, "--json")
        assert code == 0, err
        [row] = [r for r in json.loads(out) if r["run"] == name]
        return row

    def job_status(self, sid: str) -> str | None:
        """The job's status, None while Ray does not know it yet (the supervisor submits the
        attempt after the hand-off returns: a loaded machine answers 404 for a while)."""
        try:
            return self.client.get_job_status(sid).value
        except RuntimeError:
            return None

    def job_ended(self, sid: str) -> bool:
        return self.job_status(sid) in ("SUCCEEDED", "FAILED", "STOPPED")

    def events(self, name: str) -> list[str]:
        return [r["event"] for r in self.status(name, "--address", self.url).get("history") or []]


def _waiting(c: Cluster, name: str) -> None:
    c.run(name, "--max-restarts", "1", "--cluster-gpus", "2")  # this head has no GPU
    wait_until(lambda: "waiting" in c.events(name), 60, "the supervisor waits for GPUs")


def _stopped_waiting(c: Cluster, name: str) -> None:
    _waiting(c, name)
    code, _, err = cli("stop", name, "--address", c.url)
    assert code == 0, err
    wait_until(lambda: c.job_ended(f"{name}-s1"), 60, "the supervisor stops")


def _running(c: Cluster, name: str) -> None:
    c.run(name, "--max-restarts", "1")
    wait_until(lambda: c.job_status(f"{name}-a1") == "RUNNING", 120, "a1 runs")


def _unsupervised(c: Cluster, name: str) -> None:
    _running(c, name)
    [sup] = [
        p
        for p in psutil.process_iter(["cmdline"])
        if {"jobs.head.supervisor", f"{name}-s1"} <= set(p.info["cmdline"] or [])
    ]
    sup.kill()  # as an out-of-memory kill would end it
    wait_until(lambda: c.job_ended(f"{name}-s1"), 60, "the supervisor's job ends")
    time.sleep(11)  # JOBS_SUPERVISOR_LEASE_S: its lease lapses


def _succeeded(c: Cluster, name: str) -> None:
    c.run(name, "--max-restarts", "1", command=["python", "-c", "print('done')"])
    wait_until(lambda: c.job_ended(f"{name}-s1"), 60, "the supervisor finishes")


def _gave_up(c: Cluster, name: str) -> None:
    c.run(name, "--max-restarts", "0", "--max-preemptions", "1", command=["false"])
    wait_until(lambda: c.job_ended(f"{name}-s1"), 60, "the supervisor gives up")


def _stopped(c: Cluster, name: str) -> None:
    _running(c, name)
    code, _, err = cli("stop", name, "--address", c.url)
    assert code == 0, err
    wait_until(lambda: c.job_ended(f"{name}-a1") and c.job_ended(f"{name}-s1"), 60, "stopped")


def _resumed(c: Cluster, name: str) -> None:
    _stopped(c, name)
    code, _, err = cli(
        "submit", "--resume", name, "--address", c.url, "--max-restarts", "1",
        "--runs-root", str(c.root),
    )  # fmt: skip
    assert code == 0, err
    wait_until(lambda: c.job_status(f"{name}-a2") == "RUNNING", 120, "a2 runs")


# state: how to get there; from Ray: (the run's status, its supervisor's job status, the outcome
# event); from the runs root: (the record's status, the outcome event); whether it is over.
STATES: list[tuple[str, Callable[[Cluster, str], None], tuple, tuple, bool]] = [
    ("waiting", _waiting, ("WAITING", "RUNNING", None), ("WAITING", None), False),
    ("running", _running, ("RUNNING", "RUNNING", None), ("RUNNING", None), False),
    (
        "unsupervised",
        _unsupervised,
        ("UNSUPERVISED", "FAILED", None),
        ("UNSUPERVISED", None),
        False,
    ),
    (
        "succeeded",
        _succeeded,
        ("SUCCEEDED", "SUCCEEDED", "finished"),
        ("SUCCEEDED", "finished"),
        True,
    ),
    ("gave up", _gave_up, ("FAILED", "SUCCEEDED", "gave_up"), ("FAILED", "gave_up"), True),
    ("stopped", _stopped, ("STOPPED", "STOPPED", "stopped"), ("STOPPED", "stopped"), True),
    (
        "stopped before attempt 1",
        _stopped_waiting,
        ("STOPPED", "STOPPED", "stopped"),
        ("STOPPED", "stopped"),
        True,
    ),
    ("resumed", _resumed, ("RUNNING", "RUNNING", None), ("RUNNING", None), False),
]


@pytest.fixture
def cluster(ray_url, ray_client, tmp_path) -> Cluster:
    root = tmp_path / "runs"
    root.mkdir()
    yield Cluster(ray_url, root)
    for supervisors_first in (True, False):  # nothing is resubmitted after
        for job in ray_client.list_jobs():
            meta = job.metadata or {}
            if meta.get("run", "").startswith("state-") and not job.status.is_terminal():
                if (meta.get("kind") == "supervisor") == supervisors_first:
                    ray_client.stop_job(job.submission_id)


@pytest.mark.parametrize(
    ("state", "bring", "from_ray", "from_root", "over"), STATES, ids=[s[0] for s in STATES]
)
def test_every_command_reads_the_state_alike_from_ray_and_from_the_runs_root(
    cluster, state, bring, from_ray, from_root, over
) -> None:
    name = f"state-{state.replace(' ', '-')}-{uuid.uuid4().hex[:6]}"
    bring(cluster, name)
    ray_src, root_src = ("--address", cluster.url), ("--runs-root", str(cluster.root))

    def read() -> tuple[tuple, tuple, tuple, tuple]:
        row, shown = cluster.row(name, *ray_src), cluster.status(name, *ray_src)
        listed = (row["status"], row["supervisor"]["status"], row["supervisor"]["outcome"])
        told = (
            shown["status"],
            shown["supervisor"]["status"],
            (shown["outcome"] or {}).get("event"),
        )
        root_row, root_shown = cluster.row(name, *root_src), cluster.status(name, *root_src)
        return (
            listed,
            told,
            (root_row["status"], root_row["outcome"]),
            (root_shown["status"], (root_shown["outcome"] or {}).get("event")),
        )

    # Each command reads at its own moment: the views are read again until they agree, for at
    # most 30 s (a state that never reads as the table says fails with what was read last).
    want = (from_ray, from_ray, from_root, from_root)
    seen = read()
    deadline = time.monotonic() + 30
    while seen != want and time.monotonic() < deadline:
        time.sleep(1)
        seen = read()
    assert seen == want, seen

    for source in (ray_src, root_src):  # the supervisor's story, from either source
        code, out, err = cli("logs", name, *source)
        assert code == 0 and "[supervisor]" in out + err, (source, out, err)

    if over:  # an ended run stays as it ended: a stop changes nothing in either source
        code, _, err = cli("stop", name, *ray_src, "--runs-root", str(cluster.root))
        assert code == 0, err
        assert cluster.status(name, *root_src)["status"] == from_root[0]
        assert cluster.status(name, *ray_src)["status"] == from_ray[0]


def test_export_of_a_run_stopped_before_its_first_attempt_says_why_it_has_nothing(cluster):
    """`export RUN` said "no run named" of a run that `list`, `status` and `checkpoints` show."""
    name = f"state-noattempt-{uuid.uuid4().hex[:6]}"
    _stopped_waiting(cluster, name)
    code, _, err = cli("export", name, "--dry-run", "--address", cluster.url)
    assert code == 2, err
    assert err.startswith(f"error: run {name} never started an attempt (STOPPED)"), err
    assert "no run named" not in err
