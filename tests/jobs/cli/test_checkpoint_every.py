"""`status` shows the Young/Daly save period beside the configured one, and
`submit --resume RUN --checkpoint-every auto` gives the next attempt that period (a
checkpoint interval chosen, not guessed), on a real local Ray."""

from __future__ import annotations

import json
import math
import uuid

import pytest
from ray.job_submission import JobStatus
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.recipes.catalogue import RECIPES
from jobs.runs.recipe_run import Ask, Place, plan_recipe
from jobs.runs.save_period import SPOT_NODE_HOURS
from tests.jobs.conftest import REPO, wait_until

pytestmark = pytest.mark.ray

RECIPE = "verl-grpo-gsm8k"
# veRL 0.6.0's console line (verl/utils/tracking.py, `step:N - key:value - ...`): 100 s steps,
# a 20 s save at step 2; then the attempt dies as a preempted one would.
STEPS = (
    "print('step:1 - critic/score/mean:0.1 - timing_s/step:100', flush=True); "
    "print('step:2 - critic/score/mean:0.2 - timing_s/step:100 - timing_s/save_checkpoint:20', "
    "flush=True); "
    "print('step:3 - critic/score/mean:0.3 - timing_s/step:100', flush=True); "
    "raise SystemExit(1)"
)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"RAY_ADDRESS": None, "COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def _failed_recipe_attempt(ray_client) -> str:
    """Attempt 1 of a veRL recipe run as `submit` records it, whose trainer logged 3 steps."""
    run = f"ckpt-every-{uuid.uuid4().hex[:8]}"
    planned = plan_recipe(Ask(RECIPES[RECIPE], run, []), Place(None, None, "a test", dry_run=True))
    sub = planned.submission
    ray_client.submit_job(
        entrypoint=f'python -c "{STEPS}"',
        submission_id=f"{run}-a1",
        metadata=dict(sub.metadata),
    )
    wait_until(lambda: ray_client.get_job_status(f"{run}-a1") == JobStatus.FAILED, 60, "a1 fails")
    return run


def _young_daly_steps(step_s: float, save_s: float, nodes: int) -> int:
    m = SPOT_NODE_HOURS * 3600 / nodes  # no stack: the spot prior, no interruption yet
    return math.floor((math.sqrt(2 * save_s * m) - save_s) / step_s + 0.5)


def test_status_shows_the_young_daly_period_and_resume_auto_applies_it(ray_url, ray_client):
    run = _failed_recipe_attempt(ray_client)
    expected = _young_daly_steps(100.0, 20.0, nodes=1)
    code, out, err = cli("status", run, "--address", ray_url, "--json")
    assert code == 0, err
    saves = json.loads(out)["save_period"]
    assert saves["key"] == "trainer.save_freq" and saves["configured_steps"] == 20
    assert saves["young_daly"]["step_s"] == 100.0 and saves["young_daly"]["save_s"] == 20.0
    assert saves["young_daly"]["period_steps"] == expected == 15
    code, out, err = cli("status", run, "--address", ray_url)
    assert code == 0, err
    assert f"save period: every 20 steps; Young/Daly: every {expected} steps (25 min)" in out, out
    # docs/jobs.md "How the save period is chosen" shows this very line.
    [documented] = [
        t.strip()
        for t in (REPO / "docs" / "jobs.md").read_text().splitlines()
        if t.strip().startswith("save period: every")
    ]
    assert documented in out, out

    code, out, err = cli(
        "submit", "--resume", run, "--checkpoint-every", "auto", "--address", ray_url, "--json"
    )
    assert code == 0, err
    assert f"checkpoint every {expected} steps (trainer.save_freq={expected}, Young/Daly" in err
    second = ray_client.get_job_info(f"{run}-a2")
    assert f"trainer.save_freq={expected}" in json.loads(second.metadata["overrides"])
    assert f" trainer.save_freq={expected} " in second.entrypoint
    assert " trainer.save_freq=20 " not in second.entrypoint


def test_checkpoint_every_that_is_no_step_count_is_refused_before_anything_is_sent(
    ray_url, ray_client
):
    run = _failed_recipe_attempt(ray_client)
    code, out, err = cli(
        "submit", "--resume", run, "--checkpoint-every", "-3", "--address", ray_url
    )
    assert code == 2 and "--checkpoint-every '-3' is neither a positive number" in err, err
    assert f"{run}-a2" not in {j.submission_id for j in ray_client.list_jobs()}


def test_resume_dry_run_shows_the_next_attempt_and_submits_nothing(ray_url, ray_client):
    """`--resume --dry-run` shows what would be submitted (it was refused)."""
    run = _failed_recipe_attempt(ray_client)
    code, out, err = cli(
        "submit", "--resume", run, "--checkpoint-every", "auto", "--dry-run", "--json",
        "--address", ray_url,
    )  # fmt: skip
    assert code == 0, err
    shown = json.loads(out)
    assert shown["submission_id"] == f"{run}-a2"
    assert " trainer.save_freq=15 " in shown["entrypoint"]  # what the real resume above sends
    assert f"dry run: would resume run {run} after {run}-a1 FAILED, as {run}-a2" in err, err
    assert f"{run}-a2" not in {j.submission_id for j in ray_client.list_jobs()}


def test_resume_takes_a_fix_its_checkpoints_load_under_and_keeps_it(ray_url, ray_client):
    """Continuing with a fix: `--resume RUN --set` changes the learning rate (the
    recorded value goes, the new one is sent and recorded for the next resume)."""
    run = _failed_recipe_attempt(ray_client)
    code, out, err = cli(
        "submit", "--resume", run, "--set", "actor_rollout_ref.actor.optim.lr=5e-7",
        "--dry-run", "--json", "--address", ray_url,
    )  # fmt: skip
    assert code == 0, err
    shown = json.loads(out)
    assert " actor_rollout_ref.actor.optim.lr=5e-7" in shown["entrypoint"], shown["entrypoint"]
    assert shown["entrypoint"].count("actor_rollout_ref.actor.optim.lr=") == 1
    assert "actor_rollout_ref.actor.optim.lr=5e-7" in json.loads(shown["metadata"]["overrides"])
