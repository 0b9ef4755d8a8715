"""`submit --eval-at-end` on the caller's side: the eval job composed at submit time with the step
left for the supervisor, its refusal for a recipe without a held-out split, and its place in the
hand-off spec, its files uploaded."""

from __future__ import annotations

import json
import shlex

import pytest

from jobs.client.types import JobDetails, Submission
from jobs.common.errors import UsageError
from jobs.head import eval_at_end as head_side
from jobs.head import protocol
from jobs.recipes import evals, overrides
from jobs.recipes.catalogue import RECIPES
from jobs.runs import eval_at_end, handoff, plan

STEP = protocol.EVAL_STEP


def attempt(recipe_name: str, run: str = "g1") -> Submission:
    recipe = RECIPES[recipe_name]
    checked = overrides.check(recipe, [], run)
    return plan.for_recipe(recipe, run, 1, 8, [], checked, "dev", "abc")


@pytest.mark.parametrize("recipe_name", ["verl-grpo-gsm8k", "nemo-rl-grpo-gsm8k"])
def test_the_eval_job_is_rl_jobs_evals_with_the_step_left_for_the_supervisor(recipe_name):
    recipe = RECIPES[recipe_name]
    sub = eval_at_end.job(recipe, attempt(recipe_name), "", "dev", "abc", None)
    argv = shlex.split(sub.entrypoint)
    assert argv[:3] == ["python3", "-m", protocol.EVAL_MODULE]
    assert argv[argv.index("--step") + 1] == STEP
    assert argv[argv.index("--out-dir") + 1] == "/lustre/runs/g1/eval"  # the default runs root
    assert sub.metadata["kind"] == protocol.EVAL and sub.metadata["step"] == STEP
    assert (sub.metadata["metric"], sub.metadata["k"], sub.metadata["n"]) == ("pass@k", "1", "1")
    # What the supervisor sends for step 40 is what `rl-jobs eval g1 --step 40` sends.
    sent = head_side.filled(eval_at_end.for_spec(sub), 40)
    by_hand = eval_at_end.evaluate.for_run(
        recipe,
        eval_at_end.RecipeRun.of_job(attempt(recipe_name).metadata),  # type: ignore[arg-type]
        evals.request("pass@k", 1, 1),
        eval_at_end.evaluate.Target(40),
        7,
        "dev",
        "abc",
    )
    assert sent["entrypoint"] == by_hand.entrypoint
    assert sent["metadata"] == by_hand.metadata


def test_a_recipe_without_a_held_out_split_is_refused_by_the_flags_name(monkeypatch):
    monkeypatch.delitem(evals.HELD_OUT, "verl-grpo-gsm8k")
    with pytest.raises(UsageError) as e:
        eval_at_end.check(RECIPES["verl-grpo-gsm8k"])
    assert (
        str(e.value) == "--eval-at-end: recipe verl-grpo-gsm8k has no held-out split to evaluate on"
    )


def test_gpus_that_scale_on_demand_are_refused_by_the_flags_name():
    with pytest.raises(UsageError) as e:
        eval_at_end.check_gpus(True, "dev")
    assert str(e.value).startswith("--eval-at-end: stack dev's GPUs scale on demand")
    eval_at_end.check_gpus(False, "dev")  # fixed GPUs: accepted


class Cluster:
    """A dashboard that uploads local files as `gcs://` packages and records the submits."""

    def __init__(self) -> None:
        self.sent: list[Submission] = []

    def jobs(self) -> list[JobDetails]:
        return []

    def upload_working_dir(self, env: dict) -> dict:
        return {
            **env,
            **{
                key: "gcs://_ray_pkg_up.zip" if key == "working_dir" else ["gcs://_ray_pkg_m.zip"]
                for key in ("working_dir", "py_modules")
                if key in env
            },
        }

    def submit(self, sub: Submission) -> str:
        self.sent.append(sub)
        return sub.submission_id


def _hand_off(options: handoff.Options) -> protocol.Spec:
    cluster = Cluster()
    sub = attempt("verl-grpo-gsm8k")
    handoff.hand_off(
        cluster,  # type: ignore[arg-type]
        sub,
        max_restarts=0,
        gpus=8,
        checkpoint_dir="/lustre/runs/g1/checkpoints",
        hint_where="",
        options=options,
    )
    (sup,) = cluster.sent
    return protocol.Spec.from_json(sup.metadata[protocol.Spec.METADATA_KEY])


def test_the_hand_off_carries_the_eval_job_with_its_files_uploaded():
    job = eval_at_end.for_spec(
        eval_at_end.job(RECIPES["verl-grpo-gsm8k"], attempt("verl-grpo-gsm8k"), "", None, "a", None)
    )
    assert not str(job["runtime_env"]["working_dir"]).startswith("gcs://")
    spec = _hand_off(handoff.Options(wait_armed=False, eval_job=job))
    assert spec.eval_at_end is True and spec.eval_job is not None
    assert spec.eval_job["runtime_env"]["working_dir"] == "gcs://_ray_pkg_up.zip"
    assert spec.eval_job["runtime_env"]["py_modules"] == ["gcs://_ray_pkg_m.zip"]
    assert spec.eval_job["entrypoint"] == job["entrypoint"]
    assert json.loads(json.dumps(spec.eval_job)) == spec.eval_job  # JSON all the way


def test_an_eval_at_the_end_makes_the_run_supervised_and_without_it_the_spec_has_none():
    assert handoff.Options(eval_job={"entrypoint": "x"}).supervised(max_restarts=0)
    assert not handoff.Options().supervised(max_restarts=0)
    spec = _hand_off(handoff.Options(wait_armed=False))
    assert spec.eval_at_end is False and spec.eval_job is None
