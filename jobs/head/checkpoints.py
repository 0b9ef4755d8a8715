"""A run's checkpoints on Lustre: the one rule for which are complete, and how to convert one.

The supervisor (progress between failures), its pruning (jobs/head/hygiene.py) and export all
read completion from `complete_steps` here, so the three can never disagree.
Runs on the cluster (the export payload imports it), so it uses the standard library only.
Layouts, per framework and pinned version:
- NeMo RL v0.4.0 (nemo_rl/utils/checkpoint.py; reference §1.5): `checkpoint_dir/step_N/` holds
  `config.yaml` and `policy/{weights,optimizer,tokenizer}`. A save is written to `tmp_step_N`
  and renamed to `step_N` when done (`finalize_checkpoint`; a replaced one is `old_step_N`
  for a moment), so only `step_N` is complete. Resume uses the highest N.
- veRL 0.6.0 (verl/trainer/ppo/ray_trainer.py; reference §2.3): `default_local_dir/
  global_step_N/actor/`, then `latest_checkpointed_iteration.txt` = N once the save is done
  (skipped with async save). Resume reads that file, so a higher `global_step_N` is not done.
  And the tracker alone is not enough: with `max_actor_ckpt_to_keep=1` veRL deletes the previous
  step's actor files before it writes the new ones (verl/utils/checkpoint/fsdp_checkpoint_manager.py
  L205-214 @v0.6.0), so a preemption mid-save leaves the tracker on a folder without weights.
  A veRL step is complete only when its `actor/` holds weights: FSDP's
  `model_world_size_{W}_rank_{R}.pt` (verl docs/advance/checkpoint.rst), or a non-empty
  `dist_ckpt/` (the Megatron backend's distributed checkpoint).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

NEMO_STEP = re.compile(r"^step_(?P<n>[0-9]+)$")
NEMO_PARTIAL = re.compile(r"^(tmp|old)_step_[0-9]+$")
VERL_FSDP_WEIGHTS = re.compile(r"^model_world_size_[0-9]+_rank_[0-9]+\.pt$")
VERL_STEP = re.compile(r"^global_step_(?P<n>[0-9]+)$")
VERL_TRACKER = "latest_checkpointed_iteration.txt"
# Megatron writes each save into `<weights>/iter_NNNNNNN` (7 digits, Megatron-LM's
# `get_checkpoint_name`); NeMo RL's docs convert `policy/weights/iter_0000000`
# (docs/design-docs/checkpointing.md @v0.4.0).
MEGATRON_ITER = re.compile(r"^iter_(?P<n>[0-9]{7})$")
# Where NeMo RL's converters live in its image (docker/Dockerfile WORKDIR, run with `uv run`).
NEMO_RL_HOME = "/opt/nemo-rl"

BACKENDS = {"nemo-rl": ("dcp", "megatron"), "verl": ("fsdp", "megatron")}


class NoCheckpoint(Exception):
    """No checkpoint to export; the message says where it looked and what it found."""


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path


@dataclass(frozen=True)
class Plan:
    """What converts one checkpoint: a command run in `cwd`, or a folder that already is a
    Hugging Face model (copied); then the run's own tokenizer copied beside the weights."""

    argv: tuple[str, ...] = ()
    cwd: str | None = None
    copy_from: Path | None = None
    tokenizer_from: Path | None = None
    note: str = ""


def numbered(directory: Path, pattern: re.Pattern[str]) -> dict[int, Path]:
    return {
        int(m["n"]): p for p in directory.iterdir() if p.is_dir() and (m := pattern.match(p.name))
    }


def _verl_weights(actor: Path) -> bool:
    try:
        names = os.listdir(actor)
    except OSError:
        return False
    if any(VERL_FSDP_WEIGHTS.match(n) for n in names):
        return True
    dist = actor / "dist_ckpt"
    return dist.is_dir() and any(dist.iterdir())


def _nemo_rl_steps(checkpoint_dir: Path) -> dict[int, Path]:
    # tmp_step_* / old_step_* never match; a step_N without its config or weights was cut
    # short some other way (a crash during the rename's cleanup, a manual copy).
    return {
        n: p
        for n, p in numbered(checkpoint_dir, NEMO_STEP).items()
        if (p / "config.yaml").is_file() and (p / "policy" / "weights").is_dir()
    }


def _verl_steps(checkpoint_dir: Path) -> dict[int, Path]:
    # veRL writes the tracker last, after the step's files (ray_trainer.py L819-824 @0.6.0):
    # a step beyond it, or any step with no tracker at all, may be half-written; a step at or
    # below it whose actor/ lost its weights (max_actor_ckpt_to_keep=1) is not complete either.
    tracker = verl_tracker(checkpoint_dir)
    if tracker is None:
        return {}
    return {
        n: p
        for n, p in numbered(checkpoint_dir, VERL_STEP).items()
        if n <= tracker and _verl_weights(p / "actor")
    }


def complete_steps(framework: str | None, checkpoint_dir: Path) -> dict[int, Path]:
    """step -> folder of every complete checkpoint in `checkpoint_dir` (empty when none).
    `framework` None (the supervisor, which does not know it): either layout."""
    if not checkpoint_dir.is_dir():
        return {}
    if framework == "nemo-rl":
        return _nemo_rl_steps(checkpoint_dir)
    if framework == "verl":
        return _verl_steps(checkpoint_dir)
    if framework is None:
        return {**_nemo_rl_steps(checkpoint_dir), **_verl_steps(checkpoint_dir)}
    raise ValueError(f"unknown framework {framework!r}")


def half_written(checkpoint_dir: Path) -> list[str]:
    """Leftovers of saves that never finished: NeMo RL tmp_/old_step_N, veRL global_step_N
    above its tracker (only when the tracker exists: without it nothing is judged)."""
    try:
        names = os.listdir(checkpoint_dir)
    except OSError:
        return []
    tracker = verl_tracker(checkpoint_dir)
    out = [n for n in names if NEMO_PARTIAL.match(n)]
    if tracker is not None:
        out += [n for n in names if (m := VERL_STEP.match(n)) and int(m["n"]) > tracker]
    return sorted(out)


def entries(checkpoint_dir: str | None) -> frozenset[str]:
    """What the supervisor compares between failures to see progress: the complete
    checkpoints' folder names, plus any entry a plain command (neither layout) wrote; never a
    half-written save, veRL's tracker or a hidden file. Empty when the dir is unknown."""
    if not checkpoint_dir:
        return frozenset()
    root = Path(checkpoint_dir)
    try:
        names = os.listdir(root)
    except OSError:
        return frozenset()
    complete = {p.name for p in complete_steps(None, root).values()}
    other = {
        n
        for n in names
        if not (NEMO_STEP.match(n) or VERL_STEP.match(n) or NEMO_PARTIAL.match(n))
        and not n.startswith(".")
        and n != VERL_TRACKER
    }
    return frozenset(complete | other)


def activity(checkpoint_dir: str | None) -> frozenset[str]:
    """Every entry of the checkpoint dir, half-written ones included: the stall watchdog's view,
    where a save in progress is not a stall. Empty when the dir is unknown or unreadable."""
    if not checkpoint_dir:
        return frozenset()
    try:
        return frozenset(os.listdir(checkpoint_dir))
    except OSError:
        return frozenset()


def verl_tracker(checkpoint_dir: Path) -> int | None:
    """The step in veRL's `latest_checkpointed_iteration.txt`, or None (absent or unreadable)."""
    try:
        text = (checkpoint_dir / VERL_TRACKER).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def pick(framework: str, checkpoint_dir: Path, step: int | None = None) -> Checkpoint:
    """The newest complete checkpoint, or step `step`; NoCheckpoint says why there is none."""
    steps = complete_steps(framework, checkpoint_dir)
    if not steps:
        if not checkpoint_dir.is_dir():
            raise NoCheckpoint(
                f"no checkpoint in {checkpoint_dir}: the directory does not exist "
                "(did the run save one? checkpoints come every save period)"
            )
        if framework == "verl" and verl_tracker(checkpoint_dir) is None:
            raise NoCheckpoint(
                f"no checkpoint in {checkpoint_dir} is known complete: no "
                f"{VERL_TRACKER} (veRL writes it after a step's files; found: "
                f"{_listing(checkpoint_dir)})"
            )
        raise NoCheckpoint(
            f"no checkpoint in {checkpoint_dir}: no complete "
            f"{'step_N' if framework == 'nemo-rl' else 'global_step_N'} folder "
            f"(found: {_listing(checkpoint_dir)})"
        )
    if step is None:
        n = max(steps)
        return Checkpoint(n, steps[n])
    if step not in steps:
        raise NoCheckpoint(
            f"no complete checkpoint for step {step} in {checkpoint_dir}; "
            f"complete steps: {', '.join(map(str, sorted(steps)))}"
        )
    return Checkpoint(step, steps[step])


def _listing(directory: Path, limit: int = 8) -> str:
    names = sorted(p.name for p in directory.iterdir())
    if not names:
        return "nothing"
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def plan(framework: str, backend: str, ckpt: Checkpoint, out: Path) -> Plan:
    """How the framework's own tools turn `ckpt` into a Hugging Face model folder at `out`."""
    if backend not in BACKENDS.get(framework, ()):
        raise ValueError(f"no {backend!r} backend for {framework!r}")
    if framework == "verl":
        # verl/model_merger/base_model_merger.py parse_args (v0.6.0): `merge --backend
        # {fsdp,megatron} --local_dir <actor dir> --target_dir OUT`; it reads the model config
        # and tokenizer from `<local_dir>/huggingface`, which the actor checkpoint holds.
        return Plan(
            argv=(
                "python3",
                "-m",
                "verl.model_merger",
                "merge",
                "--backend",
                backend,
                "--local_dir",
                str(ckpt.path / "actor"),
                "--target_dir",
                str(out),
            )
        )
    if backend == "megatron":
        return _nemo_rl_megatron_plan(ckpt, out)
    return _nemo_rl_dtensor_plan(ckpt, out)


def _nemo_rl_megatron_plan(ckpt: Checkpoint, out: Path) -> Plan:
    weights = ckpt.path / "policy" / "weights"
    config = str(ckpt.path / "config.yaml")
    iters = numbered(weights, MEGATRON_ITER) if weights.is_dir() else {}
    if not iters:
        raise NoCheckpoint(
            f"{weights} holds no Megatron iter_NNNNNNN folder (found: "
            f"{_listing(weights)}); is this a Megatron run?"
        )
    # examples/converters/convert_megatron_to_hf.py (v0.4.0) needs the mcore extra; it
    # takes the tokenizer from policy.tokenizer.name in config.yaml.
    return Plan(
        argv=(
            "uv",
            "run",
            "--extra",
            "mcore",
            "python",
            "examples/converters/convert_megatron_to_hf.py",
            "--config",
            config,
            "--megatron-ckpt-path",
            str(iters[max(iters)]),
            "--hf-ckpt-path",
            str(out),
        ),
        cwd=NEMO_RL_HOME,
    )


def _nemo_rl_dtensor_plan(ckpt: Checkpoint, out: Path) -> Plan:
    weights = ckpt.path / "policy" / "weights"
    config = str(ckpt.path / "config.yaml")
    tokenizer = ckpt.path / "policy" / "tokenizer"
    tokenizer_from = tokenizer if tokenizer.is_dir() else None
    if (weights / ".metadata").is_file():
        # DTensor v1 writes a torch DCP checkpoint straight into policy/weights, which
        # examples/converters/convert_dcp_to_hf.py (v0.4.0) reads; its tokenizer comes from the
        # model name, so NeMo RL's docs copy policy/tokenizer afterwards
        # (docs/design-docs/checkpointing.md @v0.4.0): done here too.
        return Plan(
            argv=(
                "uv",
                "run",
                "python",
                "examples/converters/convert_dcp_to_hf.py",
                "--config",
                config,
                "--dcp-ckpt-path",
                str(weights),
                "--hf-ckpt-path",
                str(out),
            ),
            cwd=NEMO_RL_HOME,
            tokenizer_from=tokenizer_from,
        )
    consolidated = weights / "model" / "consolidated"
    if (consolidated / "config.json").is_file():
        # DTensor v2 with checkpointing.save_consolidated=true: NeMo Automodel's save_model
        # already wrote a Hugging Face folder (config.json + safetensors) here.
        return Plan(
            copy_from=consolidated,
            tokenizer_from=tokenizer_from,
            note=f"{consolidated} is already a Hugging Face model; copying it",
        )
    if (weights / "model").is_dir():
        # DTensor v2 (grpo_math_1B.yaml's `dtensor_cfg._v2: true`) saves under
        # policy/weights/model; v0.4.0's convert_dcp_to_hf asserts v1's {"model": ...} layout.
        # NeMo RL learned the v2 layout later (NVIDIA-NeMo/RL PR #1881, 2026-02).
        raise NoCheckpoint(
            f"{weights} is a DTensor v2 checkpoint (policy/weights/model/), which NeMo RL "
            "v0.4.0's convert_dcp_to_hf.py cannot read (it reads DTensor v1 only; fixed upstream "
            "after v0.4.0, NVIDIA-NeMo/RL PR #1881); runs submitted with --set "
            "checkpointing.save_consolidated=true also write a Hugging Face copy under "
            "policy/weights/model/consolidated/, which export copies"
        )
    raise NoCheckpoint(
        f"{weights} holds neither a DCP checkpoint (.metadata) nor a DTensor v2 "
        f"model/ folder (found: {_listing(weights) if weights.is_dir() else 'no such folder'})"
    )


def out_path(template: str, step: int) -> Path:
    """`--out` with `{step}` filled in (the default is `<run_dir>/hf/step_{step}`)."""
    return Path(template.replace("{step}", str(step)))
