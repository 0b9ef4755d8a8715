"""`rl-jobs checkpoints RUN` on a real local Ray: the run's checkpoint folders read on the head by a
small job, with what a resume and an export take."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from ray.job_submission import JobStatus
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head.checkpoints import VERL_TRACKER
from jobs.recipes.catalogue import RECIPES
from jobs.runs.recipe_run import Ask, Place, plan_recipe
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"RAY_ADDRESS": None, "COLUMNS": "120"})
    return result.exit_code, result.stdout, result.stderr


def _recipe_run(ray_client, checkpoint_dir: Path) -> str:
    """Attempt 1 of a veRL recipe run as `submit` records it, saving into `checkpoint_dir`."""
    run = f"ckpts-{uuid.uuid4().hex[:8]}"
    planned = plan_recipe(
        Ask(RECIPES["verl-grpo-gsm8k"], run, []), Place(None, None, "a test", dry_run=True)
    )
    metadata = {**planned.submission.metadata, "checkpoint_dir": str(checkpoint_dir)}
    ray_client.submit_job(entrypoint="true", submission_id=f"{run}-a1", metadata=metadata)
    wait_until(lambda: ray_client.get_job_status(f"{run}-a1").is_terminal(), 60, "a1 ends")
    return run


def test_checkpoints_lists_steps_sizes_and_what_resume_and_export_take(
    ray_url, ray_client, tmp_path
):
    for n, size in ((10, 2048), (20, 3 * 2**20)):
        actor = tmp_path / f"global_step_{n}" / "actor"
        actor.mkdir(parents=True)
        (actor / "model_world_size_1_rank_0.pt").write_bytes(b"w" * size)
    (tmp_path / "global_step_30" / "actor").mkdir(parents=True)  # being written
    (tmp_path / VERL_TRACKER).write_text("20")
    run = _recipe_run(ray_client, tmp_path)
    code, out, err = cli("checkpoints", run, "--address", ray_url, "--json")
    assert code == 0, err
    view = json.loads(out)
    assert [(c["step"], c["complete"]) for c in view["checkpoints"]] == [
        (10, True),
        (20, True),
        (30, False),
    ]
    assert view["checkpoints"][1]["bytes"] == 3 * 2**20
    assert (view["resume_step"], view["export_step"]) == (20, 20)
    code, out, err = cli("checkpoints", run, "--address", ray_url)
    assert code == 0, err
    step_20 = next(line for line in out.splitlines() if "step     20" in line)
    assert "complete" in step_20 and "3.0 MiB" in step_20 and "<- resume, export" in step_20
    assert "resume takes: step 20; export takes: step 20" in out
    reader = [j for j in ray_client.list_jobs() if j.submission_id == f"{run}-ckpts1"]
    assert reader and reader[0].status == JobStatus.SUCCEEDED


def test_checkpoints_of_an_unknown_run_is_refused_by_name(ray_url):
    code, _, err = cli("checkpoints", "no-such-run", "--address", ray_url)
    assert code == 2 and "no run named no-such-run" in err, err
