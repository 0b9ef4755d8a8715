"""The eval job `rl-jobs eval` sends: the step it takes from the head's checkpoint listing, the
framework's evaluation it carries, and what the job gets (env, payload, metadata)."""

from __future__ import annotations

import shlex

import pytest

from jobs.client.types import JobDetails, JobStatus
from jobs.common.errors import UsageError
from jobs.recipes import evals
from jobs.recipes.catalogue import RECIPES
from jobs.runs import evaluate, handoff
from jobs.runs import listing as job_listing
from jobs.runs.metadata import RecipeRun


def listing(*steps: tuple[int, bool]) -> dict:
    return {
        "dir": "/lustre/runs/r/checkpoints",
        "checkpoints": [{"step": s, "complete": done} for s, done in steps],
    }


def test_the_newest_complete_step_is_taken_by_default():
    assert evaluate.choose_step(listing((20, True), (40, True), (60, False)), None, "r") == 40


@pytest.mark.parametrize(
    "steps, asked, named",
    [
        (((20, True), (60, False)), 60, "--step 60: step 60 of run r is not complete"),
        (((20, True),), 30, "--step 30: step 30 of run r does not exist"),
        (((60, False),), None, "run r has no complete checkpoint to evaluate"),
    ],
)
def test_a_step_that_is_not_complete_is_refused_by_name(steps, asked, named):
    with pytest.raises(UsageError) as e:
        evaluate.choose_step(listing(*steps), asked, "r")
    assert str(e.value).startswith(named)


def recorded(recipe: str) -> RecipeRun:
    return RecipeRun(
        run="r",
        attempt=2,
        recipe=recipe,
        framework=RECIPES[recipe].framework,
        framework_version="v",
        nodes=1,
        gpus_per_node=8,
        checkpoint_dir="/lustre/runs/r/checkpoints",
    )


def test_a_nemo_rl_step_is_converted_then_run_eval_reads_the_hugging_face_folder():
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    req = evals.request("pass@k", 4, 16)
    sub = evaluate.for_run(recipe, recorded(recipe.name), req, evaluate.Target(20), 3, "dev", "c")
    argv = shlex.split(sub.entrypoint)
    cut = argv.index("--")
    job, framework = argv[:cut], argv[cut + 1 :]
    assert job[:3] == ["python3", "-m", "jobs.head.eval_job"]
    assert job[job.index("--backend") + 1] == "dcp"  # the export's converter for DTensor
    assert job[job.index("--hf-dir") + 1] == "/lustre/runs/r/hf/step_{step}"
    assert job[job.index("--cwd") + 1] == "/opt/nemo-rl"
    assert job[job.index("--data-path") + 1] == "/lustre/datasets/gsm8k/nemo/test.jsonl"
    assert framework[:6] == [
        "uv",
        "run",
        "python",
        "examples/run_eval.py",
        "--config",
        "examples/configs/evals/local_eval.yaml",
    ]
    assert "generation.model_name=/lustre/runs/r/hf/step_20" in framework
    assert "eval.save_path=/lustre/runs/r/eval/raw/step_20" in framework
    assert sub.submission_id == "r-eval-3"
    assert sub.metadata["kind"] == "eval" and sub.metadata["step"] == "20"
    assert sub.entrypoint_num_cpus == 1.0
    assert sub.runtime_env["env_vars"]["HF_HUB_OFFLINE"] == "1"


def test_code_contests_samples_are_judged_by_the_stacks_sandbox():
    recipe = RECIPES["verl-grpo-codecontests"]
    req = evals.request("pass@k", 1, 8)
    url = "http://code-sandbox.sandbox.svc:8080"
    sub = evaluate.for_run(
        recipe, recorded(recipe.name), req, evaluate.Target(16), 1, "dev", "c", url
    )
    assert sub.runtime_env["env_vars"]["CODE_SANDBOX_URL"] == url
    # The reward file veRL loads by relative path is in the job's working dir.
    assert "custom_reward_function.path=code_contests_reward.py" in sub.entrypoint
    assert "working_dir" in sub.runtime_env
    assert "trainer.resume_from_path=/lustre/runs/r/checkpoints/global_step_16" in sub.entrypoint


def test_the_base_model_is_evaluated_by_name_into_base_json():
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    sub = evaluate.for_run(
        recipe,
        recorded(recipe.name),
        evals.request("pass@k", 1, 1),
        evaluate.Target(None),
        1,
        None,
        "c",
    )
    assert f"generation.model_name={recipe.model}" in sub.entrypoint
    assert "--step" not in shlex.split(sub.entrypoint)[: shlex.split(sub.entrypoint).index("--")]
    assert sub.metadata["step"] == ""


def test_the_next_eval_number_counts_a_supervised_evals_supervisor_and_tries():
    ids = ["r-a1", "r-eval-1", "r-eval-2-s1", "r-eval-2-a1", "r-eval-2-a2", "other-eval-9"]
    assert evaluate.next_number(ids, "r") == 3
    assert evaluate.next_number(["r-eval-4-a1"], "r") == 5
    assert evaluate.next_number(["r-eval-1-b1", "r-a7"], "r") == 1


def _job(sid: str, meta: dict[str, str]) -> JobDetails:
    return JobDetails(
        status=JobStatus.RUNNING, entrypoint="x", submission_id=sid, start_time=1, metadata=meta
    )


def test_a_supervised_evals_tries_are_never_the_runs_attempts_and_are_followed_as_its_own():
    eval_meta = {"run": "r", "kind": "eval", "recipe": "verl-grpo-gsm8k"}
    tries = [_job(f"r-eval-1-a{n}", {**eval_meta, "attempt": str(n)}) for n in (2, 1)]
    attempt = _job("r-a1", {"run": "r", "kind": "recipe", "attempt": "1"})
    everyone = [*tries, attempt]
    assert [job_listing.attempt_of(j) for j in everyone] == [None, None, 1]
    assert [j.submission_id for j in job_listing.attempts(everyone, "r")] == ["r-a1"]

    class Cluster:
        def jobs(self) -> list[JobDetails]:
            return everyone

    followed = handoff._attempts(Cluster(), "r-eval-1")  # type: ignore[arg-type]
    assert [j.submission_id for j in followed] == ["r-eval-1-a1", "r-eval-1-a2"]
    assert [j.submission_id for j in handoff._attempts(Cluster(), "r")] == ["r-a1"]  # type: ignore[arg-type]
