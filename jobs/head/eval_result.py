"""An evaluation's result file: per-sample scores read from the framework's output, scored, kept.

The eval job (jobs/payloads/eval) runs the framework's own evaluation, then this reads what the
framework wrote sample by sample and scores pass@k itself (jobs.head.pass_k), the same way for
both frameworks:
- NeMo RL v0.4.0 `examples/run_eval.py` with `eval.save_path` writes `evaluation_data.json`
  (`{"evaluation_data": [{"prompt", "response", "reward", "sample_index", ...}]}`, one entry per
  sample, a problem's `num_tests_per_prompt` samples consecutive: nemo_rl/evals/eval.py
  L321-322 `repeat_interleave`, L351-368, L444-476).
- veRL 0.6.0 with `trainer.validation_data_dir` dumps `<step>.jsonl`, one line per sample with
  `input`, `output`, `score` (ray_trainer.py L418-447, called from `_validate` L620-628), the
  `val_kwargs.n` samples of a prompt consecutive (`repeat(interleave=True)`, L539-541).
The file is `<run dir>/eval/step_N.json` (`base.json` for the base model): canonical JSON (sorted
keys, no clock in it), so a job that is cut and run again writes the same bytes.
Runs on the cluster: standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.head import pass_k

RESULT_VERSION = 1
NEMO_RL_SAMPLES = "evaluation_data.json"
# The job's last log line: the result without its per-problem list, for `status` and `report`
# of a cluster (the CLI reads job logs, never Lustre).
LOG_PREFIX = "rl-on-gke-eval-result: "


class NoSamples(Exception):
    """The framework wrote no per-sample output where it was told to; the message says where."""


@dataclass(frozen=True)
class Sample:
    prompt: str
    score: float


def nemo_rl_samples(save_path: Path) -> list[Sample]:
    """The samples NeMo RL's run_eval.py saved under `eval.save_path`, in its order."""
    path = save_path / NEMO_RL_SAMPLES
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise NoSamples(f"cannot read NeMo RL's samples {path}: {e}") from None
    rows = sorted(data["evaluation_data"], key=lambda r: int(r["sample_index"]))
    return [Sample(str(r["prompt"]), float(r["reward"])) for r in rows]


def verl_samples(dump_dir: Path) -> list[Sample]:
    """The samples veRL's validation dumped into `trainer.validation_data_dir` (one file: a
    val-only run validates once)."""
    files = sorted(dump_dir.glob("*.jsonl")) if dump_dir.is_dir() else []
    if len(files) != 1:
        raise NoSamples(
            f"expected one validation dump in {dump_dir}, found {len(files)}: "
            + (", ".join(f.name for f in files) or "none")
        )
    samples = []
    for line in files[0].read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            samples.append(Sample(str(row["input"]), float(row["score"])))
    return samples


def file_digest(path: Path) -> str:
    """`sha256:<hex>` of a data file: the data revision a score belongs to."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return f"sha256:{h.hexdigest()}"


@dataclass(frozen=True)
class Settings:
    """What the evaluation was asked: the same figures the result file records."""

    run: str
    step: int | None  # None: the recipe's base model
    dataset: str
    metric: str
    k: int
    n: int
    seed: int
    data_revision: str
    model_revision: str


def result(settings: Settings, samples: Sequence[Sample]) -> dict[str, Any]:
    """The result file's content: the score, the problem count and each problem's outcome."""
    groups = pass_k.grouped([s.score for s in samples], settings.n)
    prompts = [samples[i * settings.n].prompt for i in range(len(groups))]
    for i, p in enumerate(prompts):
        if any(samples[i * settings.n + j].prompt != p for j in range(settings.n)):
            raise NoSamples(
                f"problem {i}'s {settings.n} samples do not share one prompt: the output is "
                "not laid out problem by problem"
            )
    correct = [pass_k.solved(g) for g in groups]
    return {
        "version": RESULT_VERSION,
        "run": settings.run,
        "step": settings.step,
        "dataset": settings.dataset,
        "metric": settings.metric,
        "k": settings.k,
        "n": settings.n,
        "seed": settings.seed,
        "data_revision": settings.data_revision,
        "model_revision": settings.model_revision,
        "score": pass_k.mean_pass_at_k(correct, settings.n, settings.k),
        "count": len(groups),
        "problems": [
            {"id": hashlib.sha256(p.encode()).hexdigest()[:16], "correct": c}
            for p, c in zip(prompts, correct, strict=True)
        ],
    }


def log_line(content: dict[str, Any]) -> str:
    brief = {k: v for k, v in content.items() if k != "problems"}
    return LOG_PREFIX + json.dumps(brief, sort_keys=True)


def _question(r: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(r.get(k) for k in ("dataset", "data_revision", "metric", "k", "n"))


def best_of(results: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The step result with the highest score among those that answer the newest step's
    question (same data, metric, k and n); a later step wins a tie. Never the base model, never
    a step without a score: None when no step was scored."""
    steps = [r for r in results if isinstance(r.get("step"), int)]
    if not steps:
        return None
    newest = max(steps, key=lambda r: int(r["step"]))
    alike = [r for r in steps if _question(r) == _question(newest)]
    return max(alike, key=lambda r: (float(r["score"]), int(r["step"])))


def read_dir(out_dir: Path) -> list[dict[str, Any]]:
    """Every step result in `out_dir` that reads as one (a half-written file never does:
    `write` renames it into place)."""
    found = []
    for path in sorted(out_dir.glob("step_*.json")) if out_dir.is_dir() else []:
        try:
            content = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(content, dict) and isinstance(content.get("score"), (int, float)):
            found.append(content)
    return found


def name_of(step: int | None) -> str:
    return "base.json" if step is None else f"step_{step}.json"


def write_atomic(target: Path, content: dict[str, Any]) -> None:
    """`content` as canonical JSON at `target`, renamed into place (never half a file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(content, sort_keys=True, indent=1) + "\n")
    os.replace(tmp, target)


def write(out_dir: Path, content: dict[str, Any]) -> Path:
    """Write `content` as `out_dir/step_N.json` (`base.json`), atomically."""
    target = out_dir / name_of(content["step"])
    write_atomic(target, content)
    return target
