"""What a resumed run may change: `--set` keys and a node count its checkpoints still load under.

`submit --resume RUN --set K=V [--nodes N]` continues a run with a fix. A change is refused only
where the next attempt could not load the run's checkpoints, with the reason:
- **What is loaded**: the model (the recipe's model key), LoRA, the optimizer's class (its state is
  saved with the weights), and where the checkpoints are: a different one is a different run.
- **The layout the checkpoint was written in**, per framework at its pinned tag:
  - veRL 0.6.0 (FSDP) writes one file per rank named by the world size,
    `model_world_size_{W}_rank_{r}.pt` (verl/utils/checkpoint/fsdp_checkpoint_manager.py L135-150,
    L233-235), and loads the file of its own world size and rank: the GPU count (nodes x GPUs per
    node) and the sharding knobs cannot change.
  - NeMo RL v0.4.0, DTensor policy: `torch.distributed.checkpoint` (`dcp.save`/`dcp.load`,
    nemo_rl/utils/native_checkpoint.py L159-205), which reshards on load: the node count may
    change. Megatron recipes: their checkpoints are Megatron's distributed format, whose resharding
    across a new parallel layout is not held to its code here, so their size and parallel keys stay.
Everything else (learning rate, KL and loss settings, generation, batch sizes where the recipe's
own fit rules accept them, the number of steps, logging, the save period) is the user's to change:
the recipe's planner checks those exactly as for a new run.
These refusals hold against a checkpoint only: a run that never saved one (it gave up at staging,
say, on a Hugging Face Hub it could not reach) starts over, and may change its model or size; the
resume says so.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.common.errors import UsageError
from jobs.recipes.catalogue import Recipe
from jobs.recipes.overrides import Override

VERL_CKPT = "verl/utils/checkpoint/fsdp_checkpoint_manager.py L135-150 @v0.6.0"

# Key prefixes whose change the checkpoint cannot load, with why; per framework.
_FIXED: dict[str, dict[str, str]] = {
    "nemo-rl": {
        "policy.lora_cfg": "LoRA adapters change the saved parameters",
        "policy.optimizer.name": "the optimizer's state is saved with the weights",
        "checkpointing.checkpoint_dir": "the run's checkpoints are there",
        "policy.tokenizer": "the tokenizer is the model's, saved with the run",
    },
    "verl": {
        "actor_rollout_ref.model.lora_rank": "LoRA adapters change the saved parameters",
        "actor_rollout_ref.actor.strategy": "the checkpoint is that strategy's",
        "actor_rollout_ref.actor.fsdp_config": f"FSDP shards are saved per rank ({VERL_CKPT})",
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size": (
            f"it changes the FSDP device mesh each rank's file was saved for ({VERL_CKPT})"
        ),
        "trainer.nnodes": f"the world size names each rank's file ({VERL_CKPT}); use --nodes",
        "trainer.n_gpus_per_node": f"the world size names each rank's file ({VERL_CKPT})",
        "trainer.default_local_dir": "the run's checkpoints are there",
    },
}
# Megatron's parallel layout (NeMo RL Megatron recipes): kept as the run started.
_MEGATRON_LAYOUT = "policy.megatron_cfg"


def _fixed_reason(recipe: Recipe, key: str) -> str | None:
    if key == recipe.model_key:
        return "it is the model the checkpoints hold"
    if recipe.megatron and key.startswith(_MEGATRON_LAYOUT) and key.endswith("_parallel_size"):
        return "a Megatron recipe's parallel layout stays as its checkpoints were written"
    for prefix, why in _FIXED.get(recipe.framework, {}).items():
        if key == prefix or key.startswith(prefix + "."):
            return why
    return None


def check_changes(
    run: str,
    recipe: Recipe,
    changes: list[Override],
    recorded_nodes: int,
    nodes: int | None,
    saved: Callable[[], bool] = lambda: True,
) -> str:
    """Refuse, naming each, the changes the run's checkpoints cannot load under; nothing is
    submitted then. `saved` says whether the run has a checkpoint a resume loads (asked only when
    a change would be refused): without one, the changes are taken and the note returned says
    the run starts over with them ("" when nothing was refused)."""
    problems = _problems(run, recipe, changes, recorded_nodes, nodes)
    if not problems:
        return ""
    if not saved():
        taken = [f"--set {c}" for c in changes if _fixed_reason(recipe, c.key) is not None]
        if nodes is not None and nodes != recorded_nodes:
            taken.append(f"--nodes {nodes}")
        return f"no checkpoint saved: run {run} starts over with {', '.join(taken)}"
    raise UsageError(
        f"run {run}'s checkpoints cannot load with "
        + ("this change" if len(problems) == 1 else "these changes")
        + ": "
        + "; ".join(problems),
        "resume without them, or start a new run (another --name) to change them",
    )


def _problems(
    run: str, recipe: Recipe, changes: list[Override], recorded_nodes: int, nodes: int | None
) -> list[str]:
    problems = [
        f"--set {c.key}: {why}"
        for c in changes
        if (why := _fixed_reason(recipe, c.key)) is not None
    ]
    if nodes is not None and nodes != recorded_nodes:
        if recipe.framework == "verl":
            problems.append(
                f"--nodes {nodes}: run {run} was saved on {recorded_nodes} node(s) and veRL "
                f"0.6.0 loads each rank's file by its world size ({VERL_CKPT})"
            )
        elif recipe.megatron:
            problems.append(
                f"--nodes {nodes}: a Megatron recipe's parallel layout stays as run {run}'s "
                f"checkpoints were written ({recorded_nodes} node(s))"
            )
    return problems


def merged(recorded: list[Override], changes: list[Override]) -> list[Override]:
    """The recorded overrides with the changes applied: a changed key's recorded value goes, the
    new one comes last (one value per key, as Hydra takes them)."""
    changed = {c.key for c in changes}
    return [o for o in recorded if o.key not in changed] + list(changes)
