"""`submit --resume RUN` on a real local Ray: the changes refused only against a saved checkpoint,
and the runs root the run asked for kept.

A run that never saved a checkpoint (one that gave up at staging, e.g. a Hub it could not reach)
has nothing its model or node count must match: the fix its outcome recommends (another model,
more nodes) is taken. A run refused for a runs root missing on the head is resumed with that runs
root, refused the same way while it is missing, never sent without it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import protocol
from jobs.recipes.catalogue import RECIPES
from jobs.runs.recipe_run import Ask, Place, plan_recipe
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray

RECIPE = "verl-grpo-gsm8k"
FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="1",
    JOBS_SUPERVISOR_PROGRESS_S="2",
    JOBS_SUPERVISOR_LEASE_S="3",
)
NEW_MODEL = "actor_rollout_ref.model.path=Qwen/Other"


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**FAST, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return result.exit_code, result.stdout, result.stderr


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _ids(client: JobSubmissionClient) -> set[str]:
    return {j.submission_id or "" for j in client.list_jobs()}


def _failed_recipe_run(client: JobSubmissionClient, checkpoint_dir: Path | None = None) -> str:
    """Attempt 1 of a veRL recipe run as `submit` records it, failed before its trainer began (as
    at staging); with `checkpoint_dir`, its metadata names that directory (the planned one is
    under /lustre, absent on this machine)."""
    run = name("resume")
    planned = plan_recipe(Ask(RECIPES[RECIPE], run, []), Place(None, None, "a test", dry_run=True))
    meta = dict(planned.submission.metadata)
    if checkpoint_dir is not None:
        meta["checkpoint_dir"] = str(checkpoint_dir)
    client.submit_job(
        entrypoint='python -c "raise SystemExit(1)"', submission_id=f"{run}-a1", metadata=meta
    )
    wait_until(lambda: client.get_job_status(f"{run}-a1") == JobStatus.FAILED, 60, "a1 fails")
    return run


def _saved_verl_checkpoint(root: Path) -> Path:
    """A veRL checkpoint directory holding step 2, its tracker naming it (what veRL loads)."""
    step = root / "checkpoints" / "global_step_2" / "actor"
    step.mkdir(parents=True)
    (step / "model_world_size_8_rank_0.pt").write_bytes(b"\0" * 16)
    (root / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("2")
    return root / "checkpoints"


def test_resume_refuses_by_name_what_its_checkpoints_cannot_load_and_submits_nothing(
    ray_url, ray_client, tmp_path
):
    """With a checkpoint saved, another model or node count cannot load it: refused by name."""
    run = _failed_recipe_run(ray_client, _saved_verl_checkpoint(tmp_path))
    code, _, err = cli(
        "submit", "--resume", run, "--set", NEW_MODEL, "--nodes", "2", "--address", ray_url,
    )  # fmt: skip
    assert code == 2, err
    assert "--set actor_rollout_ref.model.path: it is the model the checkpoints hold" in err
    assert "--nodes 2: run" in err
    assert "fsdp_checkpoint_manager.py" in err
    assert f"{run}-a2" not in _ids(ray_client)


def test_resume_of_a_run_that_saved_no_checkpoint_takes_another_model_and_node_count(
    ray_url, ray_client
):
    """The fix a Hub give-up's outcome recommends (load the model from elsewhere) and more nodes
    were refused "against the checkpoints" of a run that had none."""
    run = _failed_recipe_run(ray_client)
    code, out, err = cli(
        "submit", "--resume", run, "--set", NEW_MODEL, "--nodes", "2",
        "--dry-run", "--json", "--address", ray_url,
    )  # fmt: skip
    assert code == 0, err
    assert f"no checkpoint saved: run {run} starts over with --set {NEW_MODEL}, --nodes 2" in err
    shown = json.loads(out)
    assert shown["submission_id"] == f"{run}-a2"
    assert NEW_MODEL in json.loads(shown["metadata"]["overrides"])
    assert shown["metadata"]["nodes"] == "2"
    assert f"{run}-a2" not in _ids(ray_client)


def _supervisor_roots(client: JobSubmissionClient, run: str) -> list[str]:
    return [
        protocol.Spec.from_json(meta[protocol.Spec.METADATA_KEY]).runs_root
        for j in client.list_jobs()
        if (meta := j.metadata or {}).get("run") == run and protocol.Spec.METADATA_KEY in meta
    ]


def test_resume_of_a_run_refused_for_a_missing_runs_root_keeps_that_runs_root(
    ray_url, ray_client, tmp_path
):
    """The resume was sent with no runs root at all, silently dropping the one the run asked for."""
    typo = tmp_path / "lustre" / "rnus"
    run = name("root")
    code, _, err = cli(
        "run", "--address", ray_url, "--name", run, "--runs-root", str(typo),
        "--max-restarts", "1", "--", "python", "-c", "print(1)",
    )  # fmt: skip
    refusal = f"the runs root {typo} does not exist on the Ray head"
    assert code == 2 and refusal in err, err

    code, _, err = cli("submit", "--resume", run, "--address", ray_url)
    assert code == 2 and refusal in err, err
    assert f"keeping the runs root run {run} was started with: {typo}" in err, err
    assert f"{run}-a1" not in _ids(ray_client)
    assert set(_supervisor_roots(ray_client, run)) == {str(typo)}

    typo.mkdir(parents=True)
    code, _, err = cli("submit", "--resume", run, "--address", ray_url)
    assert code == 0, err
    wait_until(
        lambda: (
            f"{run}-a1" in _ids(ray_client)
            and ray_client.get_job_status(f"{run}-a1") == JobStatus.SUCCEEDED
        ),
        90,
        "the resumed attempt, supervised under its runs root, succeeds",
    )
    assert set(_supervisor_roots(ray_client, run)) == {str(typo)}
    assert (typo / run).is_dir()
