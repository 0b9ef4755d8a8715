"""One experiment-tracking (W&B) run per supervised run, whatever its attempts, re-arms and resumes.

The id is made once, kept in the run's record on the runs root (it outlives the head), and given
to every attempt as `WANDB_RUN_ID` with `WANDB_RESUME=allow` in its environment, the one input
both frameworks' `wandb.init` reads: veRL 0.6.0 calls it without an id (verl/utils/tracking.py
L69), and NeMo RL v0.4.0 passes its `logger.wandb` section as keyword arguments
(nemo_rl/utils/logger.py L172), which has no `id` unless the user sets `logger.wandb.id`, and
wandb takes the environment's id when none is passed (wandb docs, "Environment variables":
WANDB_RUN_ID, WANDB_RESUME). Without it, a run preempted five times was six W&B runs with
overlapping steps. A value the user put in the attempt's env stands.
Standard library only: this runs on the Ray head.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

RUN_ID_ENV = "WANDB_RUN_ID"
RESUME_ENV = "WANDB_RESUME"
FIELD = "wandb_run_id"  # the record field that keeps it


def kept_id(recs: list[dict[str, Any]]) -> str | None:
    """The run's id as its record keeps it (any life: a resume continues the same run)."""
    for r in recs:
        value = r.get(FIELD)
        if isinstance(value, str) and value:
            return value
    return None


def new_id() -> str:
    """A fresh id (W&B ids are letters, digits, `-` and `_`)."""
    return uuid.uuid4().hex[:16]


def with_run_id(runtime_env: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The attempt's runtime env with the run's W&B id, unless the user set one."""
    env = dict(runtime_env)
    env_vars = dict(env.get("env_vars") or {})
    if RUN_ID_ENV not in env_vars:
        env_vars[RUN_ID_ENV] = run_id
        env_vars.setdefault(RESUME_ENV, "allow")
    env["env_vars"] = env_vars
    return env
