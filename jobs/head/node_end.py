"""Saves before flex-start nodes end: each attempt told when its GPU nodes reach their maximum run duration.

A flex-start (Dynamic Workload Scheduler) node runs at most its pool's maximum run duration, then
GKE removes it (GKE "About flex-start VMs"; components/gcp/gpu_pool.py). Work since the last save
is lost then, as in a preemption, except that the moment is known in advance. Both frameworks
can save before a known end; the supervisor tells each attempt, from the start times Ray records
for the GPU nodes alive when it is submitted (`start_time_ms` in the node table,
jobs/head/node_events.py):
- NeMo RL v0.4.0: `checkpointing.checkpoint_must_save_by` "DD:HH:MM:SS", counted from the
  trainer's start (nemo_rl/utils/timer.py L264-300 `TimeoutChecker`, with `fit_last_save_time`
  so it saves one mean step early; grpo.py L855-858). After that save the trainer RETURNS
  ("Timeout has been reached, stopping training early", grpo.py L1389-1391): the job then
  SUCCEEDS without having finished, which `stopped_for_node_end` recognises so the run goes on.
  The duration counts from `grpo_train`'s start, after the cluster setup and the model and
  vLLM loads, so the time those take after the submit is allowed for (NEMO_RL_START_S).
- veRL 0.6.0: the absolute expiry in `MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP`, saved at
  the first step whose remaining time is under its longest step + 60 s + `trainer.esi_redundant_time`
  (verl/utils/checkpoint/checkpoint_manager.py L207-238 `should_save_ckpt_esi`, called in
  ray_trainer.py L1209-1226 only when `trainer.save_freq` > 0); training then goes on until the
  node ends, which the supervisor handles as a preemption.
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any

# Time kept for the save itself on top of what each framework already reserves (a mean step for
# NeMo RL, the longest step and 60 s for veRL). A 72B step with fp32 optimizer state is ~1 TB on
# Lustre (reference grpo-jobs-and-ray.md §8); 30 min covers that at ~0.6 GB/s, and on a node that
# runs for days it costs well under 1% of its time.
SAVE_MARGIN_S = 1800.0
# NeMo RL's timer starts in grpo_train (grpo.py L854-858), after setup() has started the workers
# and loaded the model (tens of minutes for the 70B Megatron recipe): a start that takes longer
# moves its save later by the excess, into the save margin.
NEMO_RL_START_S = 1800.0
NEMO_RL = "nemo-rl"
VERL = "verl"
FRAMEWORKS = (NEMO_RL, VERL)
NEMO_RL_KEY = "checkpointing.checkpoint_must_save_by"
VERL_MARGIN_KEY = "trainer.esi_redundant_time"
VERL_EXPIRY_ENV = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"
VERL_RESERVED_S = 60.0  # should_save_ckpt_esi's default save_ckpt_duration, which fit() keeps
# grpo.py L1390 at v0.4.0, printed after the save the deadline asked for, before it returns.
NEMO_RL_STOPPED = "Timeout has been reached, stopping training early"


def _alive_gpu_starts(nodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Alive worker nodes with GPUs -> when Ray recorded their start (epoch s; 0 unknown)."""
    return {
        str(n.get("node_id")): int(n.get("start_time_ms") or 0) / 1000.0
        for n in nodes
        if n.get("state") == "ALIVE"
        and not n.get("is_head_node")
        and float((n.get("resources_total") or {}).get("GPU", 0) or 0) > 0
    }


def ending(
    nodes: Iterable[Mapping[str, Any]], max_run_s: float, now_s: float, within_s: float
) -> frozenset[str]:
    """The alive GPU nodes that reach their maximum run duration within `within_s`: too soon to
    train and save on, so they are not capacity for the next attempt."""
    return frozenset(
        node
        for node, start in _alive_gpu_starts(nodes).items()
        if start > 0 and start + max_run_s - now_s < within_s
    )


def no_capacity_within_s(framework: str, max_run_s: float) -> float:
    """How close to its end a flex-start node is no longer capacity for a new attempt: the save
    margin; for NeMo RL also its start allowance and as long again to train, since its deadline
    counts from after its start. Nodes ending sooner got NeMo RL attempts that loaded, saved
    after one step and returned, again and again until the nodes ended (in the simulation, a
    120-step run on 3-hour nodes took 12 attempts; tests/jobs/head/sim/test_flex_start.py).
    At most a third of the nodes' life: when nodes end at different times, every node has this
    much left at once only if it is well under half their life, else a run would wait for ever."""
    if framework != NEMO_RL:
        return SAVE_MARGIN_S
    return max(SAVE_MARGIN_S, min(SAVE_MARGIN_S + 2 * NEMO_RL_START_S, max_run_s / 3))


def nodes_end_at(nodes: Iterable[Mapping[str, Any]], max_run_s: float, now_s: float) -> float:
    """When the first of the alive GPU nodes reaches its maximum run duration (epoch seconds).
    With none alive, the attempt's nodes are yet to come, so none ends before now + max_run_s."""
    known = [s for s in _alive_gpu_starts(nodes).values() if s > 0]
    return min(known, default=now_s) + max_run_s


def dd_hh_mm_ss(seconds: float) -> str:
    """NeMo RL's duration format (timer.py `convert_to_seconds` splits on ':' into 4 ints)."""
    s = max(0, int(seconds))
    return f"{s // 86400:02d}:{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _sets(entrypoint: str, key: str) -> bool:
    """The user set this key already (their value stands; Hydra would see it twice)."""
    try:
        words = shlex.split(entrypoint)
    except ValueError:  # unbalanced quotes: look at the plain text instead
        words = entrypoint.split()
    return any(word.lstrip("+~").split("=", 1)[0] == key for word in words if "=" in word)


def for_attempt(
    framework: str,
    entrypoint: str,
    runtime_env: Mapping[str, Any],
    ends_at_s: float,
    now_s: float,
) -> tuple[str, dict[str, Any], str]:
    """The attempt's entrypoint and runtime env with the save before `ends_at_s`, and a sentence
    saying what was asked ("" when the user's own setting stands). The recipe's launcher is the
    entrypoint's last command (jobs/recipes/catalogue.py `render`), so an override appended to it
    reaches the trainer."""
    env = dict(runtime_env)
    if framework == NEMO_RL:
        if _sets(entrypoint, NEMO_RL_KEY):
            return entrypoint, env, ""
        by = dd_hh_mm_ss(ends_at_s - now_s - SAVE_MARGIN_S - NEMO_RL_START_S)
        return (
            f"{entrypoint} {NEMO_RL_KEY}={by}",
            env,
            f"{NEMO_RL_KEY}={by} (its nodes end in {(ends_at_s - now_s) / 3600:.1f} h)",
        )
    if framework == VERL:
        env_vars = dict(env.get("env_vars") or {})
        env_vars[VERL_EXPIRY_ENV] = str(int(ends_at_s))
        env["env_vars"] = env_vars
        said = f"{VERL_EXPIRY_ENV}={int(ends_at_s)}"
        if _sets(entrypoint, VERL_MARGIN_KEY):
            return entrypoint, env, said
        margin = int(SAVE_MARGIN_S - VERL_RESERVED_S)
        return (
            f"{entrypoint} {VERL_MARGIN_KEY}={margin}",
            env,
            f"{said}, {VERL_MARGIN_KEY}={margin} (its nodes end in "
            f"{(ends_at_s - now_s) / 3600:.1f} h)",
        )
    raise ValueError(f"no save before a node's end for framework {framework!r}: {FRAMEWORKS}")


def stopped_for_node_end(log_text: str) -> bool:
    """NeMo RL saved for the deadline and returned: the attempt SUCCEEDED without finishing. A
    line of its own, as the driver prints it: Ray's log begins with "Running entrypoint for job
    ...: <entrypoint>" (job_manager), which may hold the same words."""
    return any(line.strip() == NEMO_RL_STOPPED for line in log_text.splitlines())
