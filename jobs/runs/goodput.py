"""Goodput of a run: where every hour of its life went, in buckets that add up to the whole.

Pure: a run's attempts (their start and end from Ray's job records), each attempt's step times
(jobs/head/step_lines.py, read from the frameworks' own step lines) and the supervisor's records
(jobs/head/events.py) in; hours and GPU-hours per bucket out. The run lives from its first
record (or first attempt) to now, less the time between a final record (finished, gave up,
stopped) and the resume that opened its next life; each moment it lives falls into exactly one
bucket:

- productive: steps computed for the first time (validation inside a step included);
- redone: steps computed again because an interruption came after them and before their save;
- saves: checkpoint saves (NeMo RL v0.4.0 times them inside its step, `timing/train/checkpointing`
  printed as `  • checkpointing: Xs`, grpo.py L1273 within `total_step_time` L927; veRL 0.6.0
  outside it, `timing_s/save_checkpoint`, ray_trainer.py L1226 after the `step` timer L1043,
  like `timing_s/testing` L1203);
- restart: inside an attempt, what its steps and saves do not cover (start-up to the first step,
  and the unfinished step an interruption cut); between attempts, the supervisor's own turns;
- capacity: waiting for GPUs that are not there (from `waiting` to `gpus_back` or the next
  decision);
- settle: waiting for a cluster that changed to settle before judging a failure;
- stalls: the silence before the watchdog stopped a stalled attempt.

Step lines carry no clock, so within an attempt only the sums are known: its steps and saves are
placed at the attempt's end, start-up before them. A capacity wait the supervisor recorded while
Ray still counted an attempt as live (a driver that held on while its GPU node was gone, its step
timer running through the wait) is capacity, not the attempt's: the attempt's steps are scaled
into the rest of its wall time.

GPU-hours count the run's GPUs (nodes x GPUs per node, or what its supervisor learnt its workers
used) through its life, except while the supervisor records the cluster's GPUs (`gpus` on its
waiting and settling records): then only the run's GPUs still there are counted, as they sit idle
for it; a lost node's GPUs are nobody's bill until it is back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobs.head import events as ev

BUCKETS = ("productive", "redone", "saves", "restart", "capacity", "settle", "stalls")
# The bucket a supervisor record opens between attempts; any other record ends the open one.
# A final record closes the run's life until a resume opens a new one: that time is no bucket's.
_ENDED = "ended"
_OPENS = {
    ev.WAITING: "capacity",
    ev.STILL_WAITING: "capacity",
    ev.SETTLING: "settle",
    **dict.fromkeys(ev.FINAL, _ENDED),
}


@dataclass(frozen=True)
class Step:
    """One step as its framework timed it: compute (validation included) and save seconds."""

    compute_s: float
    save_s: float = 0.0


@dataclass(frozen=True)
class AttemptTrace:
    """One attempt: when Ray ran it (ms) and the steps it logged, by global step number."""

    submission_id: str
    start_ms: int | None
    end_ms: int | None
    steps: Mapping[int, Step] = field(default_factory=dict)


@dataclass
class Goodput:
    """Seconds per bucket over the run's life, and the run's GPU count when it is known."""

    seconds: dict[str, float]
    gpus: int | None
    # What each interruption cost: from the end of an attempt that did not finish the run to the
    # next attempt's end of start-up: {after, redone, capacity, settle, restart} in seconds.
    interruptions: list[dict[str, Any]] = field(default_factory=list)
    # GPU-seconds per bucket, and per interruption: the GPUs held at each moment (see above).
    # None: priced at `gpus` throughout (a Goodput built by hand).
    gpu_seconds: dict[str, float] | None = None
    interruption_gpu_seconds: list[float] | None = None
    # Per attempt, its start-up: {submission_id, startup_s} (`_startup`; None: no step yet).
    startups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())

    @property
    def percent(self) -> float | None:
        """Productive share of the life; None before anything happened."""
        return 100.0 * self.seconds["productive"] / self.total_s if self.total_s > 0 else None

    def gpu_hours(self) -> dict[str, float] | None:
        if self.gpus is None:
            return None
        held = self.gpu_seconds or {b: self.gpus * s for b, s in self.seconds.items()}
        return {b: held[b] / 3600 for b in self.seconds}

    def _interruption_gpu_hours(self, n: int) -> float | None:
        if self.gpus is None:
            return None
        if self.interruption_gpu_seconds is not None:
            return self.interruption_gpu_seconds[n] / 3600
        return self.gpus * _cost_s(self.interruptions[n]) / 3600

    def as_json(self) -> dict[str, Any]:
        gpu_hours = self.gpu_hours()
        return {
            "percent": None if self.percent is None else round(self.percent, 1),
            "gpus": self.gpus,
            "seconds": {b: round(s, 1) for b, s in self.seconds.items()},
            "gpu_hours": None
            if gpu_hours is None
            else {b: round(h, 3) for b, h in gpu_hours.items()},
            "interruptions": [
                {
                    **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in cost.items()},
                    "gpu_hours": None if hours is None else round(hours, 3),
                }
                for n, cost in enumerate(self.interruptions)
                for hours in [self._interruption_gpu_hours(n)]
            ],
            "startups": [
                {
                    "submission_id": one["submission_id"],
                    "startup_s": None if one["startup_s"] is None else round(one["startup_s"], 1),
                }
                for one in self.startups
            ],
        }


_COST_PARTS = ("redone", "capacity", "settle", "restart")


def _cost_s(cost: Mapping[str, Any]) -> float:
    return sum(float(cost[part]) for part in _COST_PARTS)


def steps_of(curves_points: Mapping[str, Mapping[int, float]], framework: str) -> dict[int, Step]:
    """Per step, compute and save seconds from one attempt's parsed curves (metrics.Curves.points):
    NeMo RL's step time includes its save, veRL's excludes both its save and its validation."""
    step_time = curves_points.get("step_time", {})
    save = curves_points.get("save_time", {})
    validation = curves_points.get("validation_time", {})
    out: dict[int, Step] = {}
    for n, total in step_time.items():
        saved = max(0.0, save.get(n, 0.0))
        if framework == "nemo-rl":
            out[n] = Step(compute_s=max(0.0, total - saved), save_s=min(saved, max(0.0, total)))
        else:
            out[n] = Step(
                compute_s=max(0.0, total) + max(0.0, validation.get(n, 0.0)), save_s=saved
            )
    return out


def record_ms(record: Mapping[str, Any]) -> int | None:
    try:
        return int(
            datetime.fromisoformat(str(record["t"]).replace("Z", "+00:00")).timestamp() * 1000
        )
    except (KeyError, ValueError):
        return None


# The buckets whose records carry the cluster's GPUs at that moment (`gpus`, jobs/head/
# capacity_wait.py): while one is open the run holds at most that many.
_HELD_IN = ("capacity", "settle")
_GAP_PARTS = ("capacity", "settle", "restart")

# (ms, bucket it opens, GPUs the cluster had or None when the record does not say)
Mode = tuple[int, str, float | None]


def _modes(records: Sequence[Mapping[str, Any]]) -> list[Mode]:
    """What the time from each record on was spent on, and the GPUs there were meanwhile."""
    out: list[Mode] = []
    for rec in records:
        at = record_ms(rec)
        if at is not None:
            mode = _OPENS.get(str(rec.get("event")), "restart")
            held = rec.get("gpus") if mode in _HELD_IN else None
            out.append((at, mode, float(held) if isinstance(held, int | float) else None))
    return sorted(out, key=lambda m: m[0])


class _Book:
    """Seconds and GPU-seconds per bucket, filled as the life is walked in order."""

    def __init__(self, gpus: int | None) -> None:
        self.gpus = gpus or 0
        self.seconds = dict.fromkeys(BUCKETS, 0.0)
        self.gpu_seconds = dict.fromkeys(BUCKETS, 0.0)

    def add(self, bucket: str, seconds: float, held: float | None = None) -> None:
        self.seconds[bucket] += seconds
        self.gpu_seconds[bucket] += seconds * (self.gpus if held is None else min(self.gpus, held))

    def gap(self, start: int, end: int, modes: list[Mode]) -> None:
        """Spread [start, end) over the buckets the records had open at each moment."""
        if end <= start:
            return
        current: tuple[str, float | None] = ("restart", None)
        cuts: list[tuple[int, str, float | None]] = []
        for at, mode, held in modes:
            if at <= start:
                current = (mode, held)
            elif at < end:
                cuts.append((at, mode, held))
        at = start
        for cut, mode, held in [*cuts, (end, *current)]:
            if current[0] != _ENDED:
                self.add(current[0], (cut - at) / 1000, current[1])
            at, current = cut, (mode, held)


def _waits_inside(start: int, end: int, modes: list[Mode]) -> list[tuple[float, float | None]]:
    """(seconds, GPUs held) of each capacity wait the supervisor recorded inside an attempt's
    [start, end): from its record to the next record or the attempt's end. Only records
    stamped inside count: a wait open before the attempt was ended by its submission."""
    inside = [m for m in modes if start < m[0] < end]
    nexts = [m[0] for m in inside[1:]] + [end] if inside else []
    return [
        ((until - at) / 1000, held)
        for (at, mode, held), until in zip(inside, nexts, strict=True)
        if mode == "capacity"
    ]


def _stall_s(records: Sequence[Mapping[str, Any]], submission_id: str) -> float:
    return sum(
        float(r.get("quiet_s") or 0.0)
        for r in records
        if r.get("event") == ev.STALLED and r.get("submission_id") == submission_id
    )


def account(
    attempts: Sequence[AttemptTrace],
    records: Sequence[Mapping[str, Any]],
    now_ms: int,
    gpus: int | None,
) -> Goodput:
    """Where the run's life went. `records` are the supervisor's records of the run's current
    life (ev.life), `attempts` its attempts in order; a live attempt ends at `now_ms`."""
    book = _Book(gpus)
    modes = _modes(records)
    finals = sorted(at for at, mode, _ in modes if mode == _ENDED)
    spans = sorted(
        (
            (a, a.start_ms, _clipped_end(a.start_ms, min(a.end_ms or now_ms, now_ms), finals))
            for a in attempts
            if a.start_ms
        ),
        key=lambda s: s[1],
    )
    life_start = min([*(m[0] for m in modes), *(s for _, s, _ in spans)], default=now_ms)
    life_end = max(now_ms, *(e for _, _, e in spans), life_start)
    done_before = 0  # the highest step any earlier attempt completed
    cursor = life_start
    interruptions: list[dict[str, Any]] = []
    priced: list[float] = []
    startups: list[dict[str, Any]] = []
    asks = sorted(at for at in map(record_ms, records) if at is not None and _asks(records, at))
    previous: AttemptTrace | None = None
    for attempt, start, end in spans:
        seconds_before, gpu_seconds_before = dict(book.seconds), dict(book.gpu_seconds)
        book.gap(cursor, start, modes)
        lo = max(start, cursor)
        waits = _waits_inside(lo, end, modes)
        for spent, held in waits:
            book.add("capacity", spent, held)
        wall = max(0.0, (end - lo) / 1000 - sum(spent for spent, _ in waits))
        own = _attempt_buckets(attempt, done_before, wall)
        idle = own.pop("idle")
        own["stalls"] = min(_stall_s(records, attempt.submission_id), idle)
        own["restart"] = idle - own["stalls"]
        for bucket, spent in own.items():
            book.add(bucket, spent)
        startups.append(
            _startup(attempt, max([cursor, *(a for a in asks if a <= start)]), end, own)
        )
        ended_between = any(cursor <= at <= start and mode == _ENDED for at, mode, _ in modes)
        if previous is not None and not ended_between:
            # What the end of the previous attempt cost: the gap, this attempt's start-up (and
            # its own cut step when it was cut too), its waits and the steps it redid.
            cost = {b: book.seconds[b] - seconds_before[b] for b in _GAP_PARTS}
            interruptions.append({"after": previous.submission_id, "redone": own["redone"], **cost})
            priced.append(
                sum(book.gpu_seconds[b] - gpu_seconds_before[b] for b in _GAP_PARTS)
                + book.gpus * own["redone"]
            )
        done_before = max([done_before, *attempt.steps])
        cursor = max(cursor, end)
        previous = attempt
    book.gap(cursor, life_end, modes)
    return Goodput(book.seconds, gpus, interruptions, book.gpu_seconds, priced, startups)


def _asks(records: Sequence[Mapping[str, Any]], at: int) -> bool:
    """Whether a record stamped `at` asked for the run's GPUs: its request to Ray's autoscaler
    (`gpus_requested`, on a stack whose GPUs scale on demand) or a fresh hand-off."""
    return any(
        record_ms(r) == at
        and (r.get("event") == ev.GPUS_REQUESTED or (r.get("event") == ev.ARMED and r.get("fresh")))
        for r in records
    )


def _startup(
    attempt: AttemptTrace, asked: int, end: int, own: Mapping[str, float]
) -> dict[str, Any]:
    """An attempt's start-up: from when its GPUs were asked for (the run's scale-up request or
    hand-off, or the previous attempt's end, whichever came last) to its first step, which
    goodput places where its steps and saves begin (step lines carry no clock, so they sit at
    the attempt's end). Node boot, the image pull, the framework's load, the capacity waits and
    the supervisor's turns between are all in it; for an attempt an interruption cut, so is the
    part of the step it never finished."""
    if not attempt.steps:
        return {"submission_id": attempt.submission_id, "startup_s": None}
    worked = own["productive"] + own["redone"] + own["saves"]
    first_step = end - worked * 1000
    return {
        "submission_id": attempt.submission_id,
        "startup_s": max(0.0, (first_step - asked) / 1000),
    }


def _clipped_end(start: int, end: int, finals: list[int]) -> int:
    """An attempt's end within its life: a life ends at its final record (a user's stop is
    recorded, then Ray's job ends a few seconds later), which the runs root's view reads as the
    attempt's end too, so both sources tell the same life."""
    after = [at for at in finals if at >= start]
    return max(start, min(end, after[0])) if after else end


def _attempt_buckets(attempt: AttemptTrace, done_before: int, wall: float) -> dict[str, float]:
    """One attempt's own time: its steps (first-time or redone), its saves, and the rest of its
    wall time ("idle": start-up, a cut step, a stall's silence)."""
    own = dict.fromkeys(("productive", "redone", "saves"), 0.0)
    for n, step in attempt.steps.items():
        own["redone" if n <= done_before else "productive"] += step.compute_s
        own["saves"] += step.save_s
    worked = sum(own.values())
    # Step lines claiming more than the attempt lasted (a clock skew, a resumed step counted
    # twice): the attempt's wall time is the truth, its steps are scaled into it.
    scale = wall / worked if worked > wall else 1.0
    return {**{b: spent * scale for b, spent in own.items()}, "idle": wall - worked * scale}


def priced(as_json: dict[str, Any], outputs: Any | None) -> dict[str, Any]:
    """`as_json` with the run's cost when the stack prices a GPU node-hour (its
    gpuNodeHourUsd output, components/prices.py or the stack's cost.nodeHourUsd): node-hours are
    GPU-hours over the stack's GPUs per node. `outputs` is the stack's StackOutputs, or None."""
    usd = getattr(outputs, "gpu_node_hour_usd", None)
    per_node = getattr(outputs, "gpus_per_node", None)
    if not usd or not per_node or not as_json.get("gpu_hours"):
        return {**as_json, "cost_usd": None}
    node_hours = sum(as_json["gpu_hours"].values()) / per_node
    return {
        **as_json,
        "cost_usd": round(node_hours * usd, 2),
        "node_hours": round(node_hours, 3),
        "node_hour_usd": usd,
        "node_hour_source": getattr(outputs, "gpu_node_hour_source", None),
    }


def lines_of(as_json: Mapping[str, Any] | None) -> list[str]:
    """`status`'s goodput lines from `Goodput.as_json()`: the productive share of the whole, then
    each bucket that holds time, in GPU-hours when the run's size is known."""
    if not as_json or as_json.get("percent") is None:
        return []
    # A run of 0 GPUs (a `run` whose driver needs none, on no GPU node) is told in hours: its
    # 0 GPU-hours are in --json and `cost`, and would hide where its time went.
    in_gpus = bool(as_json["gpu_hours"]) and bool(as_json.get("gpus"))
    amounts = (
        as_json["gpu_hours"] if in_gpus else {b: s / 3600 for b, s in as_json["seconds"].items()}
    )
    unit = "GPU-h" if in_gpus else "h"
    if sum(amounts.values()) < 1.0:  # a short run read 0.00 in every bucket: minutes instead
        amounts = {b: h * 60 for b, h in amounts.items()}
        unit = "GPU-min" if in_gpus else "min"
    total = sum(amounts.values())
    head = f"{as_json['percent']:.0f}% productive of {total:.2f} {unit}"
    if as_json.get("cost_usd") is not None:
        head += (
            f" = {as_json['node_hours']:.2f} node-h, ${as_json['cost_usd']:,.2f} at "
            f"${as_json['node_hour_usd']:g} per node-hour"
        )
    lines = [head, ", ".join(f"{b} {amounts[b]:.2f}" for b in BUCKETS if amounts.get(b, 0) > 0)]
    if as_json.get("cost_usd") is not None and as_json.get("node_hour_source"):
        lines.append(f"price: {as_json['node_hour_source']}")
    for cost in as_json.get("interruptions") or []:
        spent = f"{cost['gpu_hours']:.2f} GPU-h" if cost.get("gpu_hours") is not None else "cost"
        parts = ", ".join(f"{p} {cost[p]:.0f} s" for p in _COST_PARTS if cost[p] >= 0.5)
        lines.append(f"the end of {cost['after']}: {spent} ({parts or 'nothing'})")
    if as_json.get("startups"):
        lines.append(
            "start-up (GPUs asked for to first step): "
            + ", ".join(
                f"{one['submission_id']} {startup_text(one)}" for one in as_json["startups"]
            )
        )
    return lines


def startup_text(one: Mapping[str, Any]) -> str:
    """One attempt's start-up (an item of `as_json()["startups"]`) as `status` and `report` say it."""
    seconds = one.get("startup_s")
    if seconds is None:
        return "no step seen"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"
