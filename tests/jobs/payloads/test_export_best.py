"""`export RUN --best` as the cluster runs it: the export payload takes the complete checkpoint with
the highest held-out score from the run's eval folder, and never a step without a score."""

from __future__ import annotations

import pytest

from jobs.head import eval_result
from jobs.recipes.catalogue import RECIPES
from jobs.runs import export
from tests.jobs.head.test_checkpoints import nemo_step
from tests.jobs.payloads.test_export_checkpoint import run_payload


def _scored(folder, step: int, score_of_10: int, k: int = 1) -> None:
    settings = eval_result.Settings("r", step, "GSM8K", "pass@k", k, k, 42, "sha256:d", "m@c")
    samples = [
        eval_result.Sample(f"q{i // k}", 1.0 if i // k < score_of_10 else 0.0)
        for i in range(10 * k)
    ]
    eval_result.write(folder, eval_result.result(settings, samples))


def _export_best(tmp_path):
    return run_payload(
        "--framework",
        "nemo-rl",
        "--backend",
        "dcp",
        "--checkpoint-dir",
        str(tmp_path / "checkpoints"),
        "--out",
        str(tmp_path / "hf/step_{step}"),
        "--best-from",
        str(tmp_path / "eval"),
    )


def test_the_best_scored_complete_step_is_exported(tmp_path):
    ckpts = tmp_path / "checkpoints"
    for step in (20, 40, 80):
        nemo_step(ckpts, f"step_{step}", weights="v2-consolidated")
    nemo_step(ckpts, "tmp_step_60", weights="v2-consolidated")  # being written
    _scored(tmp_path / "eval", 20, 7)
    _scored(tmp_path / "eval", 40, 6)
    _scored(tmp_path / "eval", 60, 9)  # scored, but its checkpoint is not complete
    # step 80 is complete and newest, but has no score: never taken by accident
    done = _export_best(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "export: step 20 scores best on GSM8K (70.0%)" in done.stdout
    assert (tmp_path / "hf" / "step_20" / "config.json").is_file()
    assert not (tmp_path / "hf" / "step_80").exists()


def test_without_a_score_nothing_is_exported_and_the_error_says_why(tmp_path):
    ckpts = tmp_path / "checkpoints"
    nemo_step(ckpts, "step_20", weights="v2-consolidated")
    done = _export_best(tmp_path)
    assert done.returncode == 1
    assert "no complete checkpoint in" in done.stderr and "has a held-out score" in done.stderr
    assert "scored steps: none; complete steps: 20" in done.stderr
    assert not (tmp_path / "hf").exists()


def test_only_scores_of_the_newest_question_compete():
    old = {"step": 20, "score": 0.9, "dataset": "GSM8K", "data_revision": "d", "metric": "pass@k"}
    rows = [
        {**old, "k": 8, "n": 8},  # pass@8 is higher than any pass@1: not comparable
        {**old, "step": 40, "score": 0.5, "k": 1, "n": 1},
        {**old, "step": 60, "score": 0.6, "k": 1, "n": 1},
        {**old, "step": None, "score": 0.95, "k": 1, "n": 1},  # the base model: never exported
    ]
    assert eval_result.best_of(rows)["step"] == 60
    assert eval_result.best_of([rows[-1]]) is None


@pytest.mark.parametrize("best, step, sent", [(True, None, "best"), (False, 20, "20")])
def test_the_export_job_names_the_eval_folder_only_for_best(best, step, sent):
    from jobs.runs.metadata import RecipeRun

    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    rec = RecipeRun(
        run="r",
        attempt=1,
        recipe=recipe.name,
        framework="nemo-rl",
        framework_version="0.4.0",
        nodes=1,
        gpus_per_node=8,
        checkpoint_dir="/lustre/runs/r/checkpoints",
    )
    sub = export.for_run(
        recipe, rec, "dcp", "/lustre/runs/r/hf/step_{step}", step, 1, None, "c", best
    )
    assert ("--best-from /lustre/runs/r/eval" in sub.entrypoint) is best
    assert sub.metadata["step"] == sent
