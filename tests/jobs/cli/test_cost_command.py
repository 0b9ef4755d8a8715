"""`rl-jobs cost` on a real local Ray head with a GPU raylet: two runs and an idle gap."""

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


def test_status_of_a_finished_run_shows_its_node_hours_and_cost_with_the_price_source(
    head, gpu, monkeypatch
) -> None:
    """`status RUN --stack NAME` prices the run at the stack's node-hour and
    names where that price comes from. The stack's port-forward is the only thing replaced: the
    dashboard answering is the local head."""
    import contextlib

    from typer.testing import CliRunner

    from jobs.cli.app import app
    from jobs.runs import portforward, stack
    from jobs.runs.metadata import RecipeRun
    from tests.jobs.conftest import stack_outputs

    client = JobSubmissionClient(head.dashboard_url)
    run = f"cost-status-{uuid.uuid4().hex[:6]}"
    recorded = RecipeRun(
        run=run,
        attempt=1,
        recipe="nemo-rl-grpo-gsm8k",
        framework="nemo-rl",
        framework_version="0.4.0",
        nodes=1,
        gpus_per_node=2,
        checkpoint_dir="/lustre/runs/x/checkpoints",
    )
    sid = client.submit_job(
        entrypoint="python -c 'import time; time.sleep(3)'",
        submission_id=f"{run}-a1",
        metadata=recorded.to_ray(),
    )
    wait_until(lambda: client.get_job_status(sid).is_terminal(), timeout=120, what=f"{sid} to end")
    outputs = stack_outputs(
        gpusPerNode=2,
        gpuNodeHourUsd=40.0,
        gpuNodeHourSource="estimate: components/prices.py, checked 2026-11",
    )
    monkeypatch.setattr(stack, "read", lambda name: outputs)

    @contextlib.contextmanager
    def forward(*_args: object, **_kwargs: object) -> Iterator[str]:
        yield head.dashboard_url

    monkeypatch.setattr(portforward, "open_forward", forward)
    result = CliRunner().invoke(app, ["status", run, "--stack", "dev"])
    assert result.exit_code == 0, result.output
    [line] = [ln for ln in result.stdout.splitlines() if "productive of" in ln]
    assert " node-h, $" in line and "at $40 per node-hour" in line, line
    assert "price: estimate: components/prices.py, checked 2026-11" in result.stdout
    shown = json.loads(CliRunner().invoke(app, ["status", run, "--stack", "dev", "--json"]).stdout)[
        "goodput"
    ]
    assert shown["node_hours"] > 0
    assert shown["cost_usd"] == pytest.approx(shown["node_hours"] * 40, abs=0.05)
    assert shown["node_hour_source"].startswith("estimate")
