"""`python -m jobs export` against a real local Ray head: the job it sends, the clean failure
when the checkpoint directory is missing, `list` filing it under the run, and its refusals."""

from __future__ import annotations

import json
import uuid

import pytest
from ray.job_submission import JobStatus

from jobs.client.net import free_port
from jobs.recipes import overrides
from jobs.recipes.catalogue import RECIPES
from jobs.runs import plan as submission
from tests.jobs.conftest import run_cli, wait_until


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def recipe_run(ray_client, recipe: str = "nemo-rl-grpo-math", entrypoint: str = "false") -> str:
    """A recipe run's attempt 1 carrying the metadata `submit` records for it; its entrypoint
    stands in for the trainer (a CPU head has no NeMo RL)."""
    run = name("exp")
    r = RECIPES[recipe]
    sub = submission.for_recipe(
        r, run, r.default_nodes, 8, [], overrides.check(r, [], run), None, "abc"
    )
    ray_client.submit_job(
        entrypoint=entrypoint, submission_id=sub.submission_id, metadata=sub.metadata
    )
    return run


def ended(ray_client, job_id: str) -> None:
    wait_until(lambda: ray_client.get_job_status(job_id).is_terminal(), 60, f"{job_id} to end")


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_dry_run_reads_the_run_and_submits_nothing(ray_url, ray_client):
    run = recipe_run(ray_client)
    ended(ray_client, f"{run}-a1")
    done = run_cli("export", run, "--step", "20", "--dry-run", "--json", "--address", ray_url)
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout)
    assert sent["submission_id"] == f"{run}-export-1"
    assert sent["entrypoint"] == (
        "python3 export_checkpoint.py --framework nemo-rl --backend megatron --checkpoint-dir "
        f"/lustre/runs/{run}/checkpoints --out '/lustre/runs/{run}/hf/step_{{step}}' --step 20"
    )
    assert sent["metadata"]["kind"] == "export" and sent["entrypoint_num_cpus"] == 1.0
    assert f"{run}-export-1" not in {j.submission_id for j in ray_client.list_jobs()}


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_export_without_a_checkpoint_fails_cleanly_and_is_listed_under_the_run(ray_url, ray_client):
    run = recipe_run(ray_client, "verl-grpo-gsm8k")
    ended(ray_client, f"{run}-a1")
    done = run_cli("export", run, "--follow", "--json", "--address", ray_url, timeout=240)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result == {
        "run": run,
        "submission_id": f"{run}-export-1",
        "status": "FAILED",
        "out": f"/lustre/runs/{run}/hf/step_{{step}}",
    }
    log = ray_client.get_job_logs(f"{run}-export-1")
    assert (
        f"export: no checkpoint in /lustre/runs/{run}/checkpoints: the directory does not exist"
        in log
    )
    assert "Traceback" not in log
    info = ray_client.get_job_info(f"{run}-export-1")
    assert info.metadata["backend"] == "fsdp" and "attempt" not in info.metadata
    listed = run_cli("list", "--json", "--address", ray_url)
    [group] = [g for g in json.loads(listed.stdout) if g["run"] == run]
    assert [a["submission_id"] for a in group["attempts"]] == [f"{run}-a1", f"{run}-export-1"]
    assert group["status"] == "FAILED" and group["recipe"] == "verl-grpo-gsm8k"
    # A second export counts up; the run's latest attempt is still what status reports.
    again = run_cli("export", run, "--dry-run", "--json", "--address", ray_url)
    assert json.loads(again.stdout)["submission_id"] == f"{run}-export-2"
    status = run_cli("status", run, "--json", "--address", ray_url)
    assert json.loads(status.stdout)["submission_id"] == f"{run}-a1"


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_a_running_run_is_refused(ray_url, ray_client):
    run = recipe_run(ray_client, entrypoint="sleep 600")
    try:
        wait_until(
            lambda: ray_client.get_job_status(f"{run}-a1") == JobStatus.RUNNING, 60, "RUNNING"
        )
        done = run_cli("export", run, "--address", ray_url)
        assert done.returncode == 2
        assert done.stderr.startswith(
            f"error: run {run} is RUNNING ({run}-a1): the checkpoint "
            "it is writing may be half-written"
        )
        assert f"stop it first with python -m jobs stop {run} --address {ray_url}" in done.stderr
    finally:
        ray_client.stop_job(f"{run}-a1")
    assert f"{run}-export-1" not in {j.submission_id for j in ray_client.list_jobs()}


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_command_runs_and_unknown_runs_are_refused(ray_url, ray_client):
    cmd = name("cmd")
    assert (
        run_cli("run", "--address", ray_url, "--name", cmd, "--follow", "--", "true").returncode
        == 0
    )
    done = run_cli("export", cmd, "--address", ray_url)
    assert done.returncode == 2
    # This said "started with `python -m jobs command`", and hints dropped --address.
    assert done.stderr.startswith(f"error: run {cmd} was started with `python -m jobs run`")
    assert f"python -m jobs submit RECIPE --address {ray_url}" in done.stderr
    failed = name("cmdfail")
    assert (
        run_cli("run", "--address", ray_url, "--name", failed, "--follow", "--", "false").returncode
        == 1
    )
    # A `run` run is resumed as Ray recorded it: here only shown, not sent.
    done = run_cli("submit", "--resume", failed, "--address", ray_url, "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["submission_id"], shown["entrypoint"]) == (f"{failed}-a2", "false")
    done = run_cli("export", "no-such-run", "--address", ray_url)
    assert done.returncode == 2 and "no run named 'no-such-run'" in done.stderr
    assert f"python -m jobs list --address {ray_url}" in done.stderr
    done = run_cli("logs", "no-such-job", "--address", ray_url)
    assert done.returncode == 2 and f"python -m jobs list --address {ray_url}" in done.stderr
    assert f"{cmd}-export-1" not in {j.submission_id for j in ray_client.list_jobs()}


@pytest.mark.subprocess_cli
def test_bad_flags_are_refused_before_anything_is_contacted():
    # Nothing listens at this address: a contact would exit 3, not 2.
    nowhere = f"http://127.0.0.1:{free_port()}"
    for args, words in (
        (
            ["r1", "--out", "/lustre/runs/r2/hf"],
            "--out /lustre/runs/r2/hf: output paths must be absolute under /lustre/runs/r1/",
        ),
        (["r1", "--out", "/lustre/runs/r1/../r2"], "'..' is not allowed"),
        (["R1!"], "run name 'R1!' is not allowed"),
        (["r1", "--step", "0"], "--step"),
    ):
        done = run_cli("export", *args, "--address", nowhere)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr, done.stderr
