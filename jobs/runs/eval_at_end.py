"""`submit --eval-at-end`: the eval job a new run's supervisor sends once the run succeeded, composed at submit time.

It is the job `rl-jobs eval RUN` would send for the newest complete step with the defaults
(pass@1, one greedy sample per problem, seed 42), composed here with the framework's own config
code (jobs/runs/evaluate.py), where the recipes are. The step is not known yet: it is written as
protocol.EVAL_STEP, which the supervisor replaces with the newest complete step when the run
succeeds (jobs/head/eval_at_end.py). The job rides in the run's hand-off spec (`eval_job`), its
files uploaded with the run's (the run's supervisor refers to the same packages until its end).
"""

from __future__ import annotations

from typing import Any

from components.contract import RUNS_ROOT
from jobs.client.types import Submission
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import evals
from jobs.recipes.catalogue import Recipe
from jobs.runs import evaluate
from jobs.runs.metadata import RecipeRun

FLAG = "--eval-at-end"
STEP = protocol.EVAL_STEP  # in the job until the supervisor knows the step


def check(recipe: Recipe) -> None:
    """Refused by name, before anything is planned, for a recipe without a held-out split."""
    if recipe.name not in evals.HELD_OUT:
        raise UsageError(
            f"{FLAG}: recipe {recipe.name} has no held-out split to evaluate on",
            f"recipes with one: {', '.join(sorted(evals.HELD_OUT))}; or submit without {FLAG}",
        )


def check_gpus(request_gpus: bool, stack: str | None) -> None:
    """Refused on GPUs that scale on demand: the run's request for its GPU nodes is released at
    its end, before the eval is sent, and nothing would ask for the eval's."""
    if request_gpus:
        raise UsageError(
            f"{FLAG}: stack {stack}'s GPUs scale on demand, and nothing asks Ray's autoscaler "
            "for the GPUs of an eval sent at the run's end (the run's request ends with it)",
            f"submit without {FLAG}, and evaluate the run with `rl-jobs eval RUN` once it "
            "succeeded",
        )


def job(
    recipe: Recipe,
    attempt: Submission,
    runs_root: str,
    stack: str | None,
    commit: str,
    sandbox_url: str | None,
) -> Submission:
    """The eval job of the run `attempt` starts, its step protocol.EVAL_STEP; its id's number
    (`<run>-eval-N`) is chosen by the supervisor when it sends it."""
    check(recipe)
    recorded = RecipeRun.of_job(attempt.metadata)
    if recorded is None:  # a planned recipe attempt always records its recipe
        raise UsageError(f"{FLAG}: {attempt.submission_id} is not a recipe run's attempt")
    return evaluate.for_run(
        recipe,
        recorded,
        evals.request("pass@k", 1, 1),
        evaluate.Target(protocol.EVAL_STEP, runs_root or RUNS_ROOT),
        0,
        stack,
        commit,
        sandbox_url,
    )


def for_spec(sub: Submission) -> dict[str, Any]:
    """The eval job as the hand-off spec holds it (protocol.Spec `eval_job`): what the
    supervisor passes to the Jobs API's submit, less the id."""
    return {
        "entrypoint": sub.entrypoint,
        "runtime_env": dict(sub.runtime_env),
        "metadata": dict(sub.metadata),
        "entrypoint_num_cpus": sub.entrypoint_num_cpus,
    }


def shown(sub: Submission) -> Submission:
    """The eval job as a dry run prints it: named as the supervisor will name it."""
    return sub.model_copy(update={"submission_id": f"{sub.run}-eval-N"})
