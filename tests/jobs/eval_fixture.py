"""A recipe run on a folder standing in for Lustre, ready to evaluate: GSM8K-shaped held-out files
written by the project's own data step (jobs.data.gsm8k), complete checkpoints, the run's model
pin, and the stub generator's answers (tests/jobs/eval_stub.py) for each model."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from components.contract import DATASETS_ROOT, RUNS_ROOT
from jobs.data import gsm8k
from jobs.recipes import evals
from jobs.recipes.catalogue import RECIPES
from jobs.runs import evaluate
from jobs.runs.metadata import RecipeRun
from tests.jobs.head.test_checkpoints import nemo_step, verl_step

STUB = Path(__file__).resolve().parent / "eval_stub.py"
QUESTIONS = [f"Tom has {i} apples and buys {i + 3} more. How many now?" for i in range(1, 6)]
EXPECTED = [str(2 * i + 3) for i in range(1, 6)]
# Per model: how many of 4 samples each problem gets right (the rest answer "0").
RIGHT = {"step_20": [4, 2, 0, 1, 3], "step_40": [4, 4, 1, 2, 3], "base": [1, 0, 0, 0, 2]}


@dataclass(frozen=True)
class Lustre:
    root: Path
    runs: Path
    datasets: Path
    answers: Path

    def local(self, value: str) -> str:
        """A path as the cluster names it, on this stand-in."""
        return value.replace(RUNS_ROOT, str(self.runs)).replace(DATASETS_ROOT, str(self.datasets))


def make(tmp: Path, run: str) -> Lustre:
    lustre = Lustre(tmp, tmp / "runs", tmp / "datasets", tmp / "answers.json")
    rows = [
        {"question": q, "answer": f"Step by step.\n#### {a}"}
        for q, a in zip(QUESTIONS, EXPECTED, strict=True)
    ]
    for fmt in gsm8k.FORMATS:
        gsm8k.write({"train": rows[:1], "test": rows}, lustre.datasets / "gsm8k", fmt)
    prompts = {
        "nemo": QUESTIONS,
        "verl": [f"{q} {gsm8k.INSTRUCTION}" for q in QUESTIONS],  # veRL's prompt text
    }
    answers = {
        fmt: {
            model: {
                p: [e] * r + ["0"] * (4 - r) for p, e, r in zip(qs, EXPECTED, right, strict=True)
            }
            for model, right in RIGHT.items()
        }
        for fmt, qs in prompts.items()
    }
    lustre.answers.write_text(json.dumps(answers))
    (lustre.runs / run).mkdir(parents=True)
    (lustre.runs / run / "staged-model.json").write_text(json.dumps({"commit": "c0ffee"}))
    return lustre


def recorded(lustre: Lustre, run: str, recipe: str) -> RecipeRun:
    ckpts = lustre.runs / run / "checkpoints"
    ckpts.mkdir(parents=True, exist_ok=True)
    for step in (20, 40):
        if RECIPES[recipe].framework == "verl":
            verl_step(ckpts, step)
        else:
            nemo_step(ckpts, f"step_{step}", weights="v2-consolidated")
    (ckpts / "latest_checkpointed_iteration.txt").write_text("40")
    return RecipeRun(
        run=run,
        attempt=1,
        recipe=recipe,
        framework=RECIPES[recipe].framework,
        framework_version="x",
        nodes=1,
        gpus_per_node=8,
        checkpoint_dir=f"{RUNS_ROOT}/{run}/checkpoints",
    )


def job_argv(lustre: Lustre, rec: RecipeRun, req: evals.Request, step: int | None) -> list[str]:
    """The eval job's argv as `rl-jobs eval` builds it, the framework's launcher replaced by the
    stub (its arguments kept), every Lustre path moved onto the stand-in."""
    recipe = RECIPES[rec.recipe]
    target = evaluate.Target(step)
    command = evaluate.framework_command(recipe, rec, req, target)
    drop = 4 if recipe.framework == "nemo-rl" else len(recipe.launcher)  # uv run python x.py
    stub = [sys.executable, str(STUB), *command.argv[drop:]]
    argv = evaluate.job_argv(recipe, rec, req, target, replace(command, argv=stub, cwd=None))
    return [lustre.local(a) for a in argv]
