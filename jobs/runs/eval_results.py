"""A run's held-out scores as kept on the runs root: the result files, their one-line summary, the best step.

`rl-jobs eval` writes `<runs root>/<run>/eval/step_N.json` (and `base.json` for the recipe's base
model) on the cluster (jobs/head/eval_result.py writes them; `EvalResult` is their schema, so a
file that does not fit it is reported, never half-read). `status` and `list` read them with
`--runs-root`; of a cluster, `status` and `report` read the same result, less its per-problem
list, from the last line of each succeeded eval job's log (the CLI never reaches Lustre).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobs.client.types import JobDetails, JobStatus
from jobs.head import eval_result, protocol
from jobs.head import events as run_events
from jobs.head.eval_result import LOG_PREFIX

EVAL_DIR = "eval"


class Problem(BaseModel):
    """One held-out problem: its prompt's digest and how many of its n samples were right."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    correct: int = Field(ge=0)


class EvalResult(BaseModel):
    """One evaluation of a step (or of the base model: `step` None)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    run: str
    step: int | None = Field(ge=1)
    dataset: str
    metric: str
    k: int = Field(ge=1)
    n: int = Field(ge=1)
    seed: int
    data_revision: str
    model_revision: str
    score: float = Field(ge=0.0, le=1.0)
    count: int = Field(ge=1)
    # Empty when read from a job's log line rather than the file.
    problems: list[Problem] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """`GSM8K 71.2%` for pass@1 (accuracy), `GSM8K pass@8 80.1%` otherwise."""
        metric = "" if self.k == 1 else f" {self.metric.replace('@k', f'@{self.k}')}"
        return f"{self.dataset}{metric} {percent(self.score)}"

    def comparable(self, other: EvalResult) -> bool:
        """Scores of one question: same held-out data and metric, k and n."""
        return (self.dataset, self.data_revision, self.metric, self.k, self.n) == (
            other.dataset,
            other.data_revision,
            other.metric,
            other.k,
            other.n,
        )


def percent(score: float) -> str:
    return f"{100 * score:.1f}%"


def read(root: str | Path, run: str) -> tuple[list[EvalResult], dict[str, str]]:
    """The run's results, steps in order then the base model's; and files that do not parse
    (name -> why)."""
    folder = Path(root) / run / EVAL_DIR
    results: list[EvalResult] = []
    bad: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            results.append(EvalResult.model_validate(json.loads(path.read_text())))
        except (OSError, ValueError, ValidationError) as e:
            bad[path.name] = " ".join(str(e).split())[:200]
    results.sort(key=lambda r: (r.step is None, r.step or 0))
    return results, bad


def from_log(text: str) -> EvalResult | None:
    """The result an eval job's log ends with, or None (it failed, or is still running)."""
    lines = [line for line in text.splitlines() if line.startswith(LOG_PREFIX)]
    if not lines:
        return None
    try:
        return EvalResult.model_validate(json.loads(lines[-1][len(LOG_PREFIX) :]))
    except (ValueError, ValidationError):
        return None


def of_jobs(jobs: Sequence[JobDetails], logs: Callable[[str], str]) -> list[EvalResult]:
    """The results of a run's succeeded eval jobs (one log read each); a later job's result
    for the same step and question replaces an earlier one's."""
    kept: dict[tuple[Any, ...], EvalResult] = {}
    for job in jobs:
        meta = job.metadata or {}
        if meta.get("kind") != protocol.EVAL or job.status != JobStatus.SUCCEEDED:
            continue
        found = from_log(logs(job.submission_id or ""))
        if found is not None:
            key = (found.step, found.dataset, found.data_revision, found.metric, found.k, found.n)
            kept.pop(key, None)
            kept[key] = found
    return sorted(kept.values(), key=lambda r: (r.step is None, r.step or 0))


def base_of(results: list[EvalResult], like: EvalResult) -> EvalResult | None:
    return next((r for r in results if r.step is None and r.comparable(like)), None)


def latest(results: list[EvalResult]) -> EvalResult | None:
    """The newest step's result (the base model's when no step was evaluated)."""
    steps = [r for r in results if r.step is not None]
    return steps[-1] if steps else next(iter(results), None)


def summary(results: list[EvalResult]) -> str | None:
    """`GSM8K 71.2% at step 300 (base 49.8%)`: the newest step beside the base model."""
    shown = latest(results)
    if shown is None:
        return None
    if shown.step is None:
        return f"{shown.label} for the base model"
    base = base_of(results, shown)
    return f"{shown.label} at step {shown.step}" + (
        f" (base {percent(base.score)})" if base else ""
    )


def best(results: list[EvalResult]) -> EvalResult | None:
    """The step `export --best` takes (jobs.head.eval_result.best_of, the one rule): the highest
    score among steps scored like the newest one; never a step without a score or the base."""
    chosen = eval_result.best_of([r.model_dump() for r in results])
    return next((r for r in results if chosen and r.step == chosen["step"]), None)


def as_json(results: list[EvalResult], bad: dict[str, str]) -> dict[str, Any]:
    """`--json`'s `eval`: every result without its per-problem list, the summary, the best."""
    top = best(results)
    return {
        "summary": summary(results),
        "best_step": top.step if top else None,
        "results": [r.model_dump(exclude={"problems"}) for r in results],
        "unreadable": bad,
    }


def table(results: list[EvalResult]) -> list[tuple[str, str, str, str, str]]:
    """The report's rows: step, dataset, metric, score, problems."""
    return [
        (
            "base" if r.step is None else str(r.step),
            r.dataset,
            f"{r.metric.replace('@k', f'@{r.k}')} (n={r.n}, seed {r.seed})",
            percent(r.score),
            str(r.count),
        )
        for r in results
    ]


def at_end(history: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """`submit --eval-at-end`: the supervisor's record of the eval it queued when the run
    succeeded (`eval_queued`, with its submission id), or of why it could not
    (`eval_not_queued`); None when the run asked for none or has not ended."""
    wanted = (run_events.EVAL_QUEUED, run_events.EVAL_NOT_QUEUED)
    return next((r for r in reversed(history) if r.get("event") in wanted), None)
