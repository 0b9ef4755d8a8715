"""Estimating a run's checkpoint footprint on Lustre, and refusing runs whose kept checkpoints cannot fit.

Estimate basis (an estimate, not a measurement): a checkpoint holds the policy weights plus its
Adam optimizer state. Mixed-precision Adam keeps fp32 master weights and two fp32 moments, 12 bytes
per parameter (ZeRO paper, Rajbhandari et al. 2020, §3.1 "K = 12"); Megatron (NeMo RL's 70B
recipes) also saves bf16 weights (2 bytes), FSDP/DTensor saves the fp32 weights as the model
state (counted in the 12). Gradients are not saved. So 14 B/param (Megatron) or 12 B/param
(FSDP, DTensor; 14 with `checkpointing.save_consolidated`, whose Hugging Face copy is bf16): a 72.7B model is ~1.0 TB per checkpoint, as the reference (§8) estimates.
Kept: NeMo RL keeps `keep_top_k` plus the latest, which is never pruned (nemo_rl/utils/checkpoint.py
L182-227 @v0.4.0); veRL keeps `max_actor_ckpt_to_keep`. One more is being written before the
oldest goes, so the peak is kept + 1. The model's download in the shared HF cache (bf16, 2 B/param)
is on the same Lustre.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jobs.recipes import compose
from jobs.recipes.catalogue import Recipe

GIB = 1024**3

# Parameter counts from the models' Hugging Face cards ("Number of Parameters").
PARAMS = {
    "Qwen/Qwen2.5-72B-Instruct": 72.7e9,
    "Qwen/Qwen2.5-3B-Instruct": 3.09e9,
    "Qwen/Qwen2.5-1.5B-Instruct": 1.54e9,
    "Qwen/Qwen2.5-1.5B": 1.54e9,
    "meta-llama/Llama-3.3-70B-Instruct": 70.6e9,
    "meta-llama/Llama-3.1-8B-Instruct": 8.03e9,
    # The card's safetensors size ("7.62B params"); the Qwen2.5-Math-7B architecture.
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": 7.62e9,
}
_SIZE_IN_NAME = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)[bB](?![a-zA-Z])")


def params(model: str) -> float | None:
    """Known count, else the `<N>B` in the model's name, else None."""
    if model in PARAMS:
        return PARAMS[model]
    m = _SIZE_IN_NAME.search(model.rsplit("/", 1)[-1])
    return float(m.group(1)) * 1e9 if m else None


@dataclass(frozen=True)
class Footprint:
    model: str
    params: float
    bytes_per_param: int
    kept: int

    @property
    def checkpoint_gib(self) -> float:
        return self.params * self.bytes_per_param / GIB

    @property
    def peak_gib(self) -> float:
        # kept + the one being written, plus the model's bf16 copy in the HF cache.
        return self.checkpoint_gib * (self.kept + 1) + self.params * 2 / GIB


def footprint(recipe: Recipe, cfg: Any) -> Footprint | None:
    model = str(compose.value(cfg, recipe.model_key))
    count = params(model)
    keep = compose.value(cfg, recipe.keep_key)
    if count is None or not isinstance(keep, int):
        return None  # unknown model, or every checkpoint kept (null): no bound to check
    if recipe.framework == "nemo-rl":
        megatron = bool(compose.value(cfg, "policy.megatron_cfg.enabled"))
        # save_consolidated adds a bf16 Hugging Face copy (2 B/param) to each DTensor checkpoint.
        consolidated = not megatron and bool(compose.value(cfg, "checkpointing.save_consolidated"))
        return Footprint(model, count, 14 if megatron or consolidated else 12, keep + 1)
    return Footprint(model, count, 12, keep)


def check(fp: Footprint | None, capacity_gib: int | None, source: str) -> tuple[bool, str]:
    """(fits, message). Unknown capacity or model: fits, with a note saying it was skipped."""
    if fp is None:
        return True, (
            "note: Lustre space not checked (the model's size is unknown, or the "
            "recipe keeps every checkpoint)"
        )
    what = (
        f"{fp.model}: ~{fp.checkpoint_gib:,.0f} GiB per checkpoint ({fp.bytes_per_param} "
        f"B/param), up to {fp.kept} kept + 1 being written + the model cache = "
        f"~{fp.peak_gib:,.0f} GiB"
    )
    if capacity_gib is None:
        return True, f"note: Lustre space not checked ({source} gives no capacity); {what}"
    if fp.peak_gib > capacity_gib:
        return False, f"{what}, more than the {capacity_gib:,} GiB Lustre of {source}"
    return True, f"note: {what} of {capacity_gib:,} GiB Lustre"
