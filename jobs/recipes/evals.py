"""Evaluating a recipe's model on held-out data: each recipe's split, what may be asked, the
framework arguments, checked with the framework's own config code (contacts nothing).

- NeMo RL v0.4.0 evaluates with `examples/run_eval.py`: `load_config(--config)` (the same
  `defaults:` chain rule as training), then the remaining `key=value` arguments merged on top
  with `OmegaConf.merge(config, OmegaConf.from_cli())` and resolved with `to_container` (run_eval.py
  L89-97); `setup` then asserts the metric, k and the sampling settings (nemo_rl/evals/eval.py
  L107-116). It loads Hugging Face models only, so a step is converted first (the export's
  conversion). `local_eval.yaml` reads a local file with `problem_key` / `solution_key`
  (eval_datasets/local_math_dataset.py); `eval.yaml` names built-in sets such as `aime2024`.
  The files are vendored in `configs/nemo-rl-v0.4.0-evals/` (Apache-2.0, LICENSE beside them).
- veRL 0.6.0 evaluates with its trainer: `trainer.val_only=True` validates once after
  `_load_checkpoint` and returns (ray_trainer.py L990-996), `trainer.resume_mode=resume_path` with
  `trainer.resume_from_path=.../global_step_N` loads that step (L845-853), and
  `trainer.validation_data_dir` dumps each sample's score (L620-628). Its `best@N` metric is a
  bootstrap estimate: pass@k is scored by the project from the dump (jobs.head.pass_k).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.recipes import compose
from jobs.recipes.catalogue import Recipe, RunContext

EVAL_CONFIGS = compose.CONFIGS / "nemo-rl-v0.4.0-evals" / "examples" / "configs" / "evals"
# Only pass@k: the project scores it from per-sample scores for both frameworks. NeMo RL's
# cons@k needs each sample's extracted answer, which veRL's dump does not carry.
METRICS = ("pass@k",)
# eval.yaml's own seed (examples/configs/evals/eval.yaml L5).
DEFAULT_SEED = 42
# NeMo RL refuses several samples per prompt without sampling (eval.py L108-111); 1.0 samples
# the model's own distribution, as Chen et al. 2021 estimate pass@k with.
SAMPLING_TEMPERATURE = 1.0
# In NeMo RL's image, relative to its home (examples/prompts/cot.txt @v0.4.0).
NEMO_RL_PROMPT = "examples/prompts/cot.txt"


class HeldOut(BaseModel):
    """A recipe's held-out split: what it is called and where the framework reads it."""

    model_config = ConfigDict(frozen=True)

    name: str  # as `status` shows it: "GSM8K"
    split: str  # which split, for the docs and --json: "test"
    # A file the recipe's data step writes ({datasets} filled in), or None for a set NeMo RL
    # loads by name (`nemo_rl_dataset`).
    data_path: str | None = None
    nemo_rl_dataset: str | None = None
    problem_key: str = "question"
    solution_key: str = "answer"


_GSM8K_NEMO = HeldOut(name="GSM8K", split="test", data_path="{datasets}/gsm8k/nemo/test.jsonl")
# DeepScaler's own validation set (deepscaler.py L43-46 @v0.4.0), staged with the recipe.
_AIME = HeldOut(name="AIME 2024", split="train", nemo_rl_dataset="aime2024")

HELD_OUT: dict[str, HeldOut] = {
    "nemo-rl-grpo-gsm8k": _GSM8K_NEMO,
    "nemo-rl-grpo-math": _AIME,
    "nemo-rl-grpo-math-codelab": _AIME,
    # veRL validates on the run's own data.val_files (the recipes point it at held-out data).
    "verl-grpo-gsm8k": HeldOut(
        name="GSM8K", split="test", data_path="{datasets}/gsm8k/verl/test.parquet"
    ),
    "verl-grpo-codecontests": HeldOut(
        name="code_contests valid",
        split="valid",
        data_path="{datasets}/code_contests_valid/easy/train.parquet",
    ),
}


class Request(BaseModel):
    """What one evaluation asks: the metric, k of n samples per problem, the seed."""

    model_config = ConfigDict(frozen=True)

    metric: str
    k: int
    n: int
    seed: int = DEFAULT_SEED

    @property
    def temperature(self) -> float:
        return 0.0 if self.n == 1 else SAMPLING_TEMPERATURE


def held_out(recipe: Recipe) -> HeldOut:
    """The recipe's held-out split; a recipe without one is refused by name."""
    found = HELD_OUT.get(recipe.name)
    if found is None:
        with_one = ", ".join(sorted(HELD_OUT))
        raise UsageError(
            f"recipe {recipe.name} has no held-out split to evaluate on",
            f"recipes with one: {with_one}",
        )
    return found


def request(metric: str, k: int, n: int, seed: int = DEFAULT_SEED) -> Request:
    """The evaluation asked for, or a UsageError naming the flag, its value and what is allowed."""
    if metric not in METRICS:
        raise UsageError(
            f"--metric {metric!r} is not a metric the project scores; allowed: {', '.join(METRICS)}",
            "cons@k needs each sample's extracted answer, which veRL does not keep",
        )
    if n < 1:
        raise UsageError(f"--n {n}: at least 1 sample per problem", "e.g. --n 1 for greedy pass@1")
    if not 1 <= k <= n:
        raise UsageError(
            f"--k {k} with --n {n}: k must be between 1 and n, since pass@k draws k of each "
            "problem's n samples",
            f"raise --n to at least {max(k, 1)}, or lower --k",
        )
    return Request(metric=metric, k=k, n=n, seed=seed)


def nemo_rl_config(held: HeldOut) -> str:
    """The eval config file run_eval.py is given: a local file or a set it knows by name."""
    return "local_eval.yaml" if held.data_path else "eval.yaml"


def nemo_rl_args(
    held: HeldOut,
    req: Request,
    model: str,
    save_path: str,
    ctx: RunContext,
    trained: Any,
) -> list[str]:
    """run_eval.py's `key=value` arguments; generation is sized as the run's own rollout was
    (`trained`: the run's composed training config)."""
    items = {
        "generation.model_name": model,
        "generation.temperature": str(req.temperature),
        "generation.vllm_cfg.tensor_parallel_size": str(
            compose.value(trained, "policy.generation.vllm_cfg.tensor_parallel_size")
        ),
        "generation.vllm_cfg.max_model_len": str(
            compose.value(trained, "policy.max_total_sequence_length")
        ),
        "eval.metric": req.metric,
        "eval.num_tests_per_prompt": str(req.n),
        "eval.k_value": str(req.k),
        "eval.seed": str(req.seed),
        "eval.save_path": save_path,
        "cluster.num_nodes": str(ctx.nodes),
        "cluster.gpus_per_node": str(ctx.gpus_per_node),
    }
    if held.data_path:
        items |= {
            "data.dataset_name": ctx.fill(held.data_path),
            "data.problem_key": held.problem_key,
            "data.solution_key": held.solution_key,
            # The datasets JSON loader reads JSONL; its one split is "train".
            "data.file_format": "json",
            "data.split": "train",
        }
    else:
        items |= {
            "data.dataset_name": str(held.nemo_rl_dataset),
            "data.prompt_file": NEMO_RL_PROMPT,
        }
    return [f"{k}={v}" for k, v in items.items()]


def verl_args(
    run_args: list[str], req: Request, checkpoint: str | None, dump_dir: str
) -> list[str]:
    """The run's own trainer arguments (as it was submitted) turned into a validation of
    `checkpoint` (a `global_step_N` folder; None: the base model)."""
    items = {
        "trainer.val_only": "True",
        "trainer.val_before_train": "True",
        "trainer.resume_mode": "resume_path" if checkpoint else "disable",
        "trainer.resume_from_path": checkpoint or "null",
        "trainer.validation_data_dir": dump_dir,
        # The eval is not a training step: its numbers stay out of the run's curves.
        "trainer.logger": '["console"]',
        "actor_rollout_ref.rollout.val_kwargs.n": str(req.n),
        "actor_rollout_ref.rollout.val_kwargs.do_sample": str(req.n > 1),
        "actor_rollout_ref.rollout.val_kwargs.temperature": str(req.temperature),
    }
    kept = [a for a in run_args if a.split("=", 1)[0].lstrip("+") not in items]
    return kept + [f"{k}={v}" for k, v in items.items()]


def check_nemo_rl(config_file: str, items: list[str]) -> dict[str, Any]:
    """run_eval.py's composition of `items` onto `config_file`, resolved; refused with the item
    named when a key is not in the config (OmegaConf's merge would add a typo silently) or
    when NeMo RL's `setup` would assert."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    cfg = compose.load_nemo_rl_file(EVAL_CONFIGS / config_file)
    known = set(compose.leaf_keys(cfg))
    for item in items:
        key = item.split("=", 1)[0]
        if key not in known:
            raise UsageError(
                f"eval setting {item}: {key} is not in NeMo RL's {config_file}",
                f"see {commands.command('recipes')} and examples/configs/evals/{config_file}",
            )
    try:
        merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(items))
        resolved: dict[str, Any] = OmegaConf.to_container(merged, resolve=True)  # type: ignore[assignment]
    except OmegaConfBaseException as e:
        raise UsageError(f"NeMo RL's {config_file} refuses the eval settings: {e}", "") from None
    ev, gen = resolved["eval"], resolved["generation"]
    # nemo_rl/evals/eval.py L107-116 @v0.4.0, said before the cluster says them.
    if ev["metric"] not in ("pass@k", "cons@k"):
        raise UsageError(f"eval.metric {ev['metric']!r}: NeMo RL knows pass@k and cons@k", "")
    if ev["num_tests_per_prompt"] > 1 and not (gen["temperature"] > 0 and gen["top_k"] != 1):
        raise UsageError("several samples per prompt need temperature > 0 and top_k != 1", "")
    if not 1 <= ev["k_value"] <= ev["num_tests_per_prompt"]:
        raise UsageError("eval.k_value must be between 1 and num_tests_per_prompt", "")
    return resolved


def check_verl(recipe: Recipe, items: list[str]) -> Any:
    """veRL's composition of the eval's trainer arguments (Hydra, struct mode)."""
    return compose.apply(recipe.framework, recipe.config_file, items)


def eval_config_path(config_file: str) -> Path:
    return EVAL_CONFIGS / config_file
