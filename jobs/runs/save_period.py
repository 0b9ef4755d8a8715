"""How often a run should save: the Young/Daly interval from its save time, step time and interruptions.

Pure. A checkpoint every tau seconds of compute costs C per save and, at each interruption, the
work since the last save (tau / 2 on average) plus the restart R. Per unit of time that is
C / tau + (tau / 2 + R) / M for a mean time between interruptions M, least at tau = sqrt(2 C M)
(J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974;
J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS
22(3), 2006, whose refinement sqrt(2 C M) - C matters only when C is a sizeable part of M). The
interval is turned into a save period in steps from the run's median step time S.

M starts from a stated prior per capacity mode and becomes the run's own as it is interrupted:
(prior + hours run) / (1 + interruptions), i.e. the prior counts as one interruption observed
(a conjugate prior for an exponential rate with one pseudo-observation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.runs.goodput import Step

HOUR = 3600.0
# Mean hours between interruptions of ONE GPU node, per capacity mode (a run of n nodes is
# interrupted n times as often). Priors, replaced by the run's own record as it runs:
# - hardware: Meta's Llama 3 training saw 419 unexpected interruptions in 54 days on 16,384
#   H100 GPUs, i.e. 2,048 nodes of 8 ("The Llama 3 Herd of Models", 2024, section 3.3.4):
#   54 x 24 x 2048 / 419 = 6,335 node-hours between interruptions.
# - spot: Google publishes no preemption rate for spot VMs ("can be preempted at any time",
#   cloud.google.com/compute/docs/instances/spot). An assumption: 16 node-hours, i.e. one
#   interruption every 8 hours for a 2-node run, the rate bench/goodput_20h.py plans for.
# - flex-start: VMs are not preempted; they end at their maximum run duration (GKE default and
#   limit 7 days), so the hardware rate bounded by that.
HARDWARE_NODE_HOURS = 54 * 24 * 2048 / 419
SPOT_NODE_HOURS = 16.0
FLEX_START_MAX_RUN_HOURS = 7 * 24.0
PRIOR_NODE_HOURS = {
    "spot": SPOT_NODE_HOURS,
    "flex-start": min(HARDWARE_NODE_HOURS, FLEX_START_MAX_RUN_HOURS),
    "reservation": HARDWARE_NODE_HOURS,
    "on-demand": HARDWARE_NODE_HOURS,
}


@dataclass(frozen=True)
class Measured:
    """What the run itself showed: median compute and save seconds per step, median restart
    seconds per interruption, seconds its attempts ran, and how often it was interrupted."""

    step_s: float | None
    save_s: float | None
    restart_s: float | None
    ran_s: float
    interruptions: int


@dataclass(frozen=True)
class Advice:
    """The Young/Daly save period for a run, with what it was computed from."""

    interval_s: float
    period_steps: int
    save_s: float
    step_s: float
    mtbi_s: float
    mtbi_source: str  # "prior (spot)" or "observed: 2 interruptions in 15.3 h"
    aligned_to: int | None = None  # NeMo RL: a multiple of grpo.val_period

    def as_json(self) -> dict[str, Any]:
        return {
            "interval_s": round(self.interval_s, 1),
            "period_steps": self.period_steps,
            "save_s": round(self.save_s, 2),
            "step_s": round(self.step_s, 2),
            "mtbi_s": round(self.mtbi_s, 1),
            "mtbi_source": self.mtbi_source,
            "aligned_to": self.aligned_to,
        }


def median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def measured(
    steps: Mapping[int, Step], interruption_costs: Sequence[float], ran_s: float
) -> Measured:
    """The run's medians from its steps (goodput.steps_of) and the restart seconds each
    interruption cost (capacity wait excluded: it is the cloud's, not the save period's)."""
    return Measured(
        step_s=median([s.compute_s for s in steps.values() if s.compute_s > 0]),
        save_s=median([s.save_s for s in steps.values() if s.save_s > 0]),
        restart_s=median(list(interruption_costs)),
        ran_s=ran_s,
        interruptions=len(interruption_costs),
    )


def mtbi(
    provisioning: str | None, nodes: int, ran_s: float, interruptions: int
) -> tuple[float, str]:
    """Mean seconds between the run's interruptions and where the figure comes from."""
    mode = provisioning if provisioning in PRIOR_NODE_HOURS else "spot"
    prior_s = PRIOR_NODE_HOURS[mode] * HOUR / max(1, nodes)
    if interruptions == 0:
        return prior_s, f"prior ({mode}, {nodes} node{'s' if nodes != 1 else ''})"
    value = (prior_s + ran_s) / (1 + interruptions)
    return (
        value,
        f"observed: {interruptions} interruption(s) in {ran_s / HOUR:.1f} h, with the {mode} prior",
    )


def young_daly_s(save_s: float, mtbi_s: float) -> float:
    """Compute seconds between saves: Daly's sqrt(2 C M) - C where C < 2 M, else M (saving more
    often than interruptions come is all cost)."""
    if save_s <= 0 or mtbi_s <= 0:
        raise ValueError(
            f"save time {save_s} and mean time between interruptions {mtbi_s} must be > 0"
        )
    if save_s >= 2 * mtbi_s:
        return mtbi_s
    return math.sqrt(2 * save_s * mtbi_s) - save_s


def period_steps(interval_s: float, step_s: float, align: int | None = None) -> int:
    """The interval in whole steps (at least 1, halves up), a multiple of `align` when given."""
    if step_s <= 0:
        raise ValueError(f"step time {step_s} must be > 0")
    steps = max(1, math.floor(interval_s / step_s + 0.5))
    if align and align > 1:
        steps = max(align, align * math.floor(steps / align + 0.5))
    return steps


def waste_fraction(period_s: float, save_s: float, mtbi_s: float, restart_s: float) -> float:
    """Expected share of the run's time that is not first-time compute, to first order: the
    saves, and per interruption half a save period of redone work plus the restart."""
    segment = period_s + save_s
    return save_s / segment + (segment / 2 + restart_s) / mtbi_s


def advise(
    seen: Measured, provisioning: str | None, nodes: int, align: int | None = None
) -> Advice | None:
    """The save period for what the run has shown; None until it has timed a step and a save."""
    if not seen.step_s or not seen.save_s:
        return None
    m, source = mtbi(provisioning, nodes, seen.ran_s, seen.interruptions)
    interval = young_daly_s(seen.save_s, m)
    return Advice(
        interval_s=interval,
        period_steps=period_steps(interval, seen.step_s, align),
        save_s=seen.save_s,
        step_s=seen.step_s,
        mtbi_s=m,
        mtbi_source=source,
        aligned_to=align if align and align > 1 else None,
    )


def line_of(advice: Mapping[str, Any] | None, configured: int | None) -> str:
    """`status`'s save-period line from `Advice.as_json()` and the run's configured period."""
    if not advice:
        return ""
    now = f"every {configured} steps" if configured else "not set"
    aligned = (
        f", a multiple of val_period {advice['aligned_to']}" if advice.get("aligned_to") else ""
    )
    return (
        f"{now}; Young/Daly: every {advice['period_steps']} steps "
        f"({advice['interval_s'] / 60:.0f} min{aligned}) from save {advice['save_s']:.3g} s, "
        f"step {advice['step_s']:.3g} s, an interruption every {advice['mtbi_s'] / HOUR:.1f} h "
        f"({advice['mtbi_source']})"
    )
