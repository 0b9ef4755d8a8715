"""Where a run stands, from its parsed curves: progress, its one-line summary and the reward sparkline.

The curves themselves are parsed by jobs/head/step_lines.py (shipped to the head: the supervisor
publishes the same figures as gauges); the names are re-exported here for the runs library.
"""

from __future__ import annotations

from typing import Any

from jobs.head.step_lines import (
    METRICS,
    VALIDATION_PREFIX,
    Curves,
    parse,
    parse_verl_line,
    title_of,
)

__all__ = [
    "METRICS",
    "VALIDATION_PREFIX",
    "Curves",
    "parse",
    "parse_verl_line",
    "progress",
    "progress_line",
    "sparkline",
    "title_of",
]


def progress(curves: Curves) -> dict[str, Any] | None:
    """Where the run stands, from its merged curves: the last step logged, NeMo RL's `i of N`
    within its epoch, the latest reward and loss, the median step time, and an ETA when the
    total is known (NeMo RL, one epoch: N is then the run's last step)."""
    logged = sorted({s for steps in curves.points.values() for s in steps})
    if not logged:
        return None
    step = logged[-1]
    times = sorted(v for _, v in curves.series("step_time"))
    per_step = times[len(times) // 2] if times else None
    out: dict[str, Any] = {"step": step, "of": None, "epoch": None, "seconds_per_step": per_step}
    complete = curves.complete_saves()
    out["checkpoint_step"] = complete[-1] if complete else None
    pending = curves.saves - curves.saved
    out["saving_step"] = max(pending) if pending else None
    for metric in ("reward", "loss"):
        series = curves.series(metric)
        out[metric] = series[-1][1] if series else None
    rewards = curves.series("reward")
    out["reward_sparkline"] = sparkline(rewards)
    out["reward_range"] = (
        [min(v for _, v in rewards), max(v for _, v in rewards)] if rewards else None
    )
    if curves.position is not None:
        epoch, epochs, i, n = curves.position
        out["epoch"] = f"{epoch}/{epochs}"
        out["of"] = n if epochs == 1 else None
        out["in_epoch"] = f"{i} of {n}"
        if epochs == 1 and per_step is not None:
            out["eta_s"] = max(0, n - i) * per_step
    return out


def progress_line(p: dict[str, Any] | None) -> str:
    if not p:
        return ""
    where = f"step {p['step']}" + (f" of {p['of']}" if p.get("of") else "")
    if p.get("epoch") and not p["epoch"].endswith("/1"):
        where += f" (epoch {p['epoch']}, {p['in_epoch']})"
    parts = [where]
    parts += [f"{m} {p[m]:.4g}" for m in ("reward", "loss") if p.get(m) is not None]
    if p.get("checkpoint_step") is not None:
        parts.append(f"checkpoint step {p['checkpoint_step']}")
    if p.get("saving_step") is not None:
        parts.append(f"saving step {p['saving_step']}")
    if p.get("seconds_per_step") is not None:
        parts.append(f"{p['seconds_per_step']:.3g} s/step")
    if p.get("eta_s") is not None:
        eta_s = p["eta_s"]  # under 90 s in seconds: "ETA 0 min" read as done
        parts.append(f"ETA {eta_s:.0f} s" if eta_s < 90 else f"ETA {eta_s / 60:.0f} min")
    return ", ".join(parts)


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(points: list[tuple[int, float]], width: int = 40) -> str:
    """The last `width` values as one line of block characters, lowest to highest (a flat
    series is a flat line); "" with fewer than two points."""
    values = [v for _, v in points[-width:]]
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return _BARS[len(_BARS) // 2] * len(values)
    scale = (len(_BARS) - 1) / (high - low)
    return "".join(_BARS[round((v - low) * scale)] for v in values)
