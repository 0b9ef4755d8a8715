"""Which cluster sizes a composed config runs on: the frameworks' batch and parallelism rules.

Each rule restates one check the pinned framework makes when the run starts (file:line at the
tag), so the CLI refuses before submitting what the framework would refuse minutes later, after a
model load. The rules read a few numbers from the composed config (`numbers`), so the nearest
sizes that fit are found without composing again. tests/jobs/recipes/test_fit.py sweeps every recipe x
1..16 nodes through the real composition and, for veRL, the real `validate_config`.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import gcd
from typing import Any

from jobs.recipes import compose

Numbers = dict[str, Any]

_NEMO_KEYS = {
    "megatron": "policy.megatron_cfg.enabled",
    "dtensor": "policy.dtensor_cfg.enabled",
    "m_tp": "policy.megatron_cfg.tensor_model_parallel_size",
    "m_pp": "policy.megatron_cfg.pipeline_model_parallel_size",
    "m_cp": "policy.megatron_cfg.context_parallel_size",
    "d_tp": "policy.dtensor_cfg.tensor_parallel_size",
    "d_cp": "policy.dtensor_cfg.context_parallel_size",
    "v_tp": "policy.generation.vllm_cfg.tensor_parallel_size",
    "v_pp": "policy.generation.vllm_cfg.pipeline_parallel_size",
    "colocated": "policy.generation.colocated.enabled",
    "prompts": "grpo.num_prompts_per_step",
    "gens": "grpo.num_generations_per_prompt",
    "gbs": "policy.train_global_batch_size",
}
_VERL_KEYS = {
    "train_bs": "data.train_batch_size",
    "n": "actor_rollout_ref.rollout.n",
    "mini": "actor_rollout_ref.actor.ppo_mini_batch_size",
    "micro": "actor_rollout_ref.actor.ppo_micro_batch_size",
    "micro_gpu": "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "dynamic": "actor_rollout_ref.actor.use_dynamic_bsz",
    "strategy": "actor_rollout_ref.actor.strategy",
    "sp": "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "ref_sp": "actor_rollout_ref.ref.ulysses_sequence_parallel_size",
    "remove_padding": "actor_rollout_ref.model.use_remove_padding",
    "r_tp": "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "r_dp": "actor_rollout_ref.rollout.data_parallel_size",
    "r_pp": "actor_rollout_ref.rollout.pipeline_model_parallel_size",
}
KEYS = {"nemo-rl": _NEMO_KEYS, "verl": _VERL_KEYS}
# The keys `adapt` may set, per framework: the batch sizes, never the model layout.
ADAPTABLE = {"nemo-rl": ("prompts", "gbs"), "verl": ("train_bs", "mini")}


def numbers(framework: str, cfg: Any) -> Numbers:
    return {name: compose.value(cfg, key) for name, key in KEYS[framework].items()}


def _counts(framework: str, v: Numbers) -> list[str]:
    """The names whose value the rules below count with, for this config's layout."""
    if framework == "nemo-rl":
        layout = ["m_tp", "m_pp", "m_cp"] if v["megatron"] else ["d_tp", "d_cp"]
        return [*layout, "v_tp", "v_pp", "prompts", "gens", "gbs"]
    micro = ["micro"] if v["micro"] is not None else ["micro_gpu"] if v["micro_gpu"] else []
    return ["train_bs", "n", "mini", "sp", "ref_sp", "r_tp", "r_dp", "r_pp", *micro]


def not_counts(framework: str, v: Numbers) -> list[str]:
    """The config keys among the rules' counts that are not positive integers: the frameworks
    divide and multiply by them (the files cited below), so no cluster size can make up for
    one of them, and no size hint should suggest one."""
    return [
        KEYS[framework][name]
        for name in _counts(framework, v)
        if not isinstance(v[name], int) or isinstance(v[name], bool) or v[name] <= 0
    ]


def _nemo_problems(v: Numbers, world: int) -> list[str]:
    out: list[str] = []
    if bool(v["megatron"]) == bool(v["dtensor"]):
        # nemo_rl/models/policy/lm_policy.py L84-104 @v0.4.0
        return [
            "exactly one of policy.megatron_cfg.enabled and policy.dtensor_cfg.enabled must "
            "be true (NeMo RL v0.4.0 lm_policy.py L84-104)"
        ]
    if not v["colocated"]:
        return []  # the training world is then cluster minus generation nodes: not judged here
    if v["megatron"]:
        mp, what = (
            v["m_tp"] * v["m_pp"] * v["m_cp"],
            (f"megatron TP {v['m_tp']} x PP {v['m_pp']} x CP {v['m_cp']}"),
        )
    else:
        mp, what = v["d_tp"] * v["d_cp"], f"dtensor TP {v['d_tp']} x CP {v['d_cp']}"
    if world < mp or world % mp:
        # lm_policy.py L121-139: DP = world / (PP*CP*TP) must be a positive integer.
        out.append(
            f"{world} GPUs is not a multiple of the {mp} GPUs one model replica takes "
            f"({what}; NeMo RL v0.4.0 lm_policy.py L121-139)"
        )
        return out
    v_mp = v["v_tp"] * v["v_pp"]
    if world % v_mp:
        # nemo_rl/models/generation/vllm/vllm_generation.py L61-66
        out.append(
            f"{world} GPUs is not a multiple of vLLM TP x PP = {v_mp} "
            "(NeMo RL v0.4.0 vllm_generation.py L61-66)"
        )
    dp = world // mp
    samples = v["prompts"] * v["gens"]
    # lm_policy.train L303 shards the step's samples by train_global_batch_size over DP ranks:
    # batched_data_dict.py L373-380 asserts both divisions.
    if samples % v["gbs"]:
        out.append(
            f"grpo.num_prompts_per_step x num_generations_per_prompt = {samples} is not a "
            f"multiple of policy.train_global_batch_size {v['gbs']} (NeMo RL v0.4.0 "
            "batched_data_dict.py L373-376)"
        )
    if v["gbs"] % dp:
        out.append(
            f"policy.train_global_batch_size {v['gbs']} is not a multiple of the "
            f"data-parallel size {dp} = {world} GPUs / {mp} ({what}) (NeMo RL v0.4.0 "
            "batched_data_dict.py L377-380)"
        )
    return out


def _verl_problems(v: Numbers, world: int) -> list[str]:
    out: list[str] = []
    if v["strategy"] not in ("fsdp", "fsdp2"):
        return [f"actor strategy {v['strategy']!r}: only FSDP recipes are checked here"]
    if world % v["sp"]:
        # fsdp_workers.py L161-168 @v0.6.0: the Ulysses mesh is (world // sp, sp), which
        # init_device_mesh builds only when sp divides the world size.
        return [
            f"{world} GPUs is not a multiple of actor.ulysses_sequence_parallel_size "
            f"{v['sp']} (veRL 0.6.0 fsdp_workers.py L161-168)"
        ]
    if v["sp"] > 1 and not v["remove_padding"]:
        # verl/workers/config/actor.py FSDPActorConfig.validate L239-247
        out.append(
            f"ulysses_sequence_parallel_size {v['sp']} needs "
            "actor_rollout_ref.model.use_remove_padding=True (veRL 0.6.0 "
            "workers/config/actor.py FSDPActorConfig.validate)"
        )
    if v["ref_sp"] != v["sp"]:
        # The ref policy's forward (dp_actor.py L71, config.ref) runs on the mesh built from
        # the actor's size (fsdp_workers.py L161-168, L823): the two must agree.
        out.append(
            f"ref.ulysses_sequence_parallel_size {v['ref_sp']} differs from the actor's "
            f"{v['sp']} (veRL 0.6.0 fsdp_workers.py L161-168, L823)"
        )
    if not v["dynamic"]:
        # verl/utils/config.py L87-113 @v0.6.0 (validate_config, FSDP branch: minimal_bsz = n_gpus)
        if (v["train_bs"] * v["n"]) % world:
            out.append(
                f"data.train_batch_size x rollout.n = {v['train_bs'] * v['n']} is not a "
                f"multiple of {world} GPUs (veRL 0.6.0 verl/utils/config.py L109-113)"
            )
        # verl/workers/config/actor.py ActorConfig.validate L96-103
        if v["train_bs"] < v["mini"]:
            out.append(
                f"data.train_batch_size {v['train_bs']} is below actor.ppo_mini_batch_size "
                f"{v['mini']} (veRL 0.6.0 workers/config/actor.py ActorConfig.validate)"
            )
        # verl/workers/fsdp_workers.py L234-254: the actor's mini-batch per GPU group
        per_gpu = (v["mini"] * v["n"]) // (world // v["sp"])
        micro = v["micro_gpu"] if v["micro"] is None else v["micro"] // (world // v["sp"])
        if per_gpu <= 0:
            out.append(
                f"actor.ppo_mini_batch_size x rollout.n / GPUs = {per_gpu} must be > 0 "
                "(veRL 0.6.0 fsdp_workers.py L234-238)"
            )
        elif micro and (per_gpu % micro or per_gpu // micro <= 0):
            out.append(
                f"actor.ppo_mini_batch_size {v['mini']} x rollout.n {v['n']} // "
                f"({world} GPUs / sp {v['sp']}) = {per_gpu} is not a multiple of "
                f"ppo_micro_batch_size_per_gpu {micro} (veRL 0.6.0 fsdp_workers.py "
                "L247-254)"
            )
    infer = v["r_tp"] * v["r_dp"] * v["r_pp"]
    if world % infer:
        out.append(
            f"{world} GPUs is not a multiple of the rollout's TP x DP x PP = {infer} "
            "(veRL 0.6.0 fsdp_workers.py L573-579)"
        )
    return out


def problems(framework: str, v: Numbers, nodes: int, gpus_per_node: int) -> list[str]:
    world = nodes * gpus_per_node
    return (_nemo_problems if framework == "nemo-rl" else _verl_problems)(v, world)


def _round_up(x: int, step: int) -> int:
    return -(-x // step) * step


def _first_fit(
    framework: str, candidates: Iterator[Numbers], nodes: int, gpus_per_node: int
) -> Numbers | None:
    """The first candidate that passes every rule above: each is judged by `problems`, the same
    checks a run at this size gets, not by the arithmetic that proposed it."""
    return next((c for c in candidates if not problems(framework, c, nodes, gpus_per_node)), None)


def _nemo_candidates(v: Numbers, dp: int, ceiling: int) -> Iterator[Numbers]:
    """Prompt counts from the recipe's upwards (the fewest extra prompts first), each with the
    smallest global batch at or above the recipe's that the data-parallel size divides and
    that divides the step's samples (batched_data_dict.py L373-380)."""
    for prompts in range(v["prompts"], ceiling + 1):
        samples = prompts * v["gens"]
        for gbs in range(_round_up(v["gbs"], dp), samples + 1, dp):
            if samples % gbs == 0:
                yield {**v, "prompts": prompts, "gbs": gbs}
                break


def _verl_candidates(v: Numbers, world: int, ceiling: tuple[int, int]) -> Iterator[Numbers]:
    """Train batch sizes from the recipe's upwards on the steps the GPU count allows
    (utils/config.py L109-113), each with mini-batch sizes from the recipe's upwards that split
    into whole micro-batches on every GPU group without fsdp_workers.py L234-254's floor
    division shrinking them (mini * n a multiple of groups * micro)."""
    groups = world // v["sp"]
    unit = groups * v["micro_gpu"] // gcd(v["n"], groups * v["micro_gpu"])
    step = world // gcd(v["n"], world)
    for train_bs in range(_round_up(v["train_bs"], step), ceiling[0] + 1, step):
        for mini in range(_round_up(v["mini"], unit), min(train_bs, ceiling[1]) + 1, unit):
            yield {**v, "train_bs": train_bs, "mini": mini}


def _coarse(framework: str, v: Numbers, world: int, mp: int) -> Numbers:
    """A size that always meets the batch rules (multiples all the way up); it bounds the
    search for the nearest one and is never returned unless nothing smaller fits."""
    new = dict(v)
    if framework == "nemo-rl":
        new["gbs"] = _round_up(v["gbs"], world // mp)
        new["prompts"] = _round_up(v["prompts"], new["gbs"] // gcd(new["gbs"], v["gens"]))
        return new
    groups = world // v["sp"]
    unit = groups * v["micro_gpu"] // gcd(v["n"], groups * v["micro_gpu"])
    new["mini"] = _round_up(v["mini"], unit)
    train_bs = _round_up(max(v["train_bs"], new["mini"]), new["mini"])
    while (train_bs * v["n"]) % world:
        train_bs += new["mini"]
    new["train_bs"] = train_bs
    return new


def adapt(framework: str, v: Numbers, nodes: int, gpus_per_node: int) -> Numbers | None:
    """Batch sizes, as close above the recipe's as the rules allow, for this size; None when
    the model layout itself does not fit (then only another size helps)."""
    world = nodes * gpus_per_node
    if framework == "nemo-rl":
        if not v["colocated"] or bool(v["megatron"]) == bool(v["dtensor"]):
            return None
        mp = v["m_tp"] * v["m_pp"] * v["m_cp"] if v["megatron"] else v["d_tp"] * v["d_cp"]
        if world < mp or world % mp:
            return None
        bound = _coarse(framework, v, world, mp)
        found = _first_fit(
            framework, _nemo_candidates(v, world // mp, bound["prompts"]), nodes, gpus_per_node
        )
    else:
        if v["dynamic"] or v["micro"] is not None or not v["micro_gpu"] or world % v["sp"]:
            return None  # (world % sp: the model layout does not fit; batch sizes cannot help)
        bound = _coarse(framework, v, world, 1)
        found = _first_fit(
            framework,
            _verl_candidates(v, world, (bound["train_bs"], bound["mini"])),
            nodes,
            gpus_per_node,
        )
    if found is None and not problems(framework, bound, nodes, gpus_per_node):
        found = bound
    return found


def nearest_fits(
    framework: str, v: Numbers, nodes: int, gpus_per_node: int, can_adapt: bool, limit: int = 16
) -> list[int]:
    """The node counts nearest below and above `nodes` (same GPUs per node) that fit."""

    def fits(n: int) -> bool:
        return not problems(framework, v, n, gpus_per_node) or (
            can_adapt and adapt(framework, v, n, gpus_per_node) is not None
        )

    top = max(limit, nodes * 2)
    below = next((n for n in range(nodes - 1, 0, -1) if fits(n)), None)
    above = next((n for n in range(nodes + 1, top + 1) if fits(n)), None)
    return [n for n in (below, above) if n is not None]
