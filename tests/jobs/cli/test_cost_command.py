"""`rl-jobs cost` on a real local Ray head with a GPU raylet: two runs and an idle gap (issue 27 item 2)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from tests import localray
from tests.jobs.conftest import run_cli, wait_until
from tests.jobs.gpu_node import GpuNode, joined

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]

GAP_S = 6.0


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2)
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture(scope="module")
def gpu(head: localray.LocalRay) -> Iterator[GpuNode]:
    with joined(head, 2) as node:
        yield node


def _attempt(client: JobSubmissionClient, run: str) -> str:
    """One attempt as `rl-jobs submit` records it (metadata str -> str, nodes included)."""
    sid = client.submit_job(
        entrypoint="python -c 'import time; time.sleep(2)'",
        submission_id=f"{run}-a1",
        metadata={
            "run": run,
            "attempt": "1",
            "kind": "recipe",
            "recipe": "nemo-rl-grpo-gsm8k",
            "nodes": "1",
            "gpus_per_node": "2",
        },
    )
    wait_until(lambda: client.get_job_status(sid).is_terminal(), timeout=120, what=f"{sid} to end")
    assert client.get_job_status(sid) == JobStatus.SUCCEEDED
    return sid


def test_cost_shows_both_runs_and_the_idle_gap_between_them(head, gpu) -> None:
    client = JobSubmissionClient(head.dashboard_url)
    tag = uuid.uuid4().hex[:6]
    first, second = f"cost-a-{tag}", f"cost-b-{tag}"
    _attempt(client, first)
    time.sleep(GAP_S)  # the GPU node is alive and no run runs: idle
    _attempt(client, second)

    done = run_cli(
        "cost", "--address", head.dashboard_url, "--node-hour-usd", "3600", "--json", timeout=120
    )
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    runs = {r["run"]: r for r in view["runs"]}
    assert [r["run"] for r in view["runs"]][:2] == [second, first]  # newest first
    for run in (first, second):
        (attempt,) = runs[run]["attempts"]
        assert attempt["nodes"] == 1 and attempt["status"] == "SUCCEEDED"
        # 1 node x the attempt's seconds; priced at $3600/h, dollars equal seconds.
        assert 2.0 <= runs[run]["usd"] < 60.0
        assert runs[run]["usd"] == pytest.approx(runs[run]["node_hours"] * 3600, rel=1e-3)
    # The GPU raylet was alive through the gap with no attempt running.
    assert view["idle_node_hours"] * 3600 >= GAP_S - 0.5
    assert view["price_source"] == "--node-hour-usd"

    table = run_cli("cost", "--address", head.dashboard_url, timeout=120)
    assert table.returncode == 0, table.stderr
    assert first in table.stdout and second in table.stdout and "idle" in table.stdout
    assert "no price" in table.stdout


def test_a_bad_since_exits_2_naming_the_flag(head) -> None:
    done = run_cli("cost", "--address", head.dashboard_url, "--since", "a week", timeout=60)
    assert done.returncode == 2
    assert "--since 'a week'" in done.stderr
