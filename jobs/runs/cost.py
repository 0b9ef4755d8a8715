"""GPU node-hours and their cost: per run from its attempts, and the stack's idle GPU nodes over a period.

Pure: it reads Ray's job records (`JobDetails`: `start_time` / `end_time` in milliseconds since
the epoch, Ray 2.60 dashboard/modules/job/pydantic_models.py) and Ray's node table (the state
API's node rows: `start_time_ms`, `end_time_ms`, `state`, `is_head_node`, `resources_total`;
jobs/head/node_events.py), and contacts nothing.

- A run's node-hours are, for each attempt, the GPU nodes it recorded at submit (its metadata
  `nodes`, jobs/runs/metadata.py RecipeRun) times its time from submission to its end (now, while
  it runs), clipped to the period. The time an attempt waited for its GPU nodes to come up counts:
  those nodes bill while they boot and pull the image. A job that records no node count (not
  submitted by `rl-jobs submit`) shows its hours as unknown rather than a guess.
- Idle node-hours are the time GPU nodes were alive in Ray's node table while no attempt of any
  run was running, over the period. A node that is alive while another run's attempt runs counts
  as busy: the question answered is "what did the stack spend with nothing training".
- Both are bounded by what the head remembers: Ray keeps jobs and (up to
  RAY_maximum_gcs_dead_node_cached_count, 1000 by default) dead nodes since the head started.
  A node that Ray has not yet seen (a VM still booting, before its raylet registers) is not in
  the table, so idle hours are a floor, not the bill.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.client.types import JobDetails
from jobs.common.errors import UsageError
from jobs.runs import list_filter
from jobs.runs.listing import attempt_of, metadata_of, run_of

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs

MS_PER_HOUR = 3_600_000


@dataclass(frozen=True)
class Interval:
    start_ms: int
    end_ms: int

    @property
    def hours(self) -> float:
        return max(0, self.end_ms - self.start_ms) / MS_PER_HOUR

    def clip(self, period: Interval) -> Interval | None:
        start, end = max(self.start_ms, period.start_ms), min(self.end_ms, period.end_ms)
        return Interval(start, end) if end > start else None


@dataclass(frozen=True)
class AttemptUsage:
    submission_id: str
    attempt: int
    status: str
    nodes: int | None  # None: the job recorded no node count
    interval: Interval | None  # None: outside the period, or never started

    @property
    def node_hours(self) -> float | None:
        if self.interval is None:
            return 0.0
        return None if self.nodes is None else self.nodes * self.interval.hours


@dataclass
class RunUsage:
    run: str
    recipe: str = ""
    attempts: list[AttemptUsage] = field(default_factory=list)
    # The run's GPUs over its whole life, as `status`'s goodput counts them (jobs/runs/goodput.py:
    # capacity waits and the supervisor's turns included, not clipped to the period); None when
    # nothing says how many GPUs it has. Filled by the caller, which reads the run's records.
    gpu_hours: float | None = None

    @property
    def node_hours(self) -> float | None:
        hours = [a.node_hours for a in self.attempts]
        return None if any(h is None for h in hours) else sum(h or 0.0 for h in hours)

    @property
    def hours_known(self) -> bool:
        return self.node_hours is not None


def _nodes_of(job: JobDetails) -> int | None:
    value = (job.metadata or {}).get("nodes", "")
    return int(value) if value.isdigit() else None


def attempt_interval(job: JobDetails, period: Interval) -> Interval | None:
    """The attempt's time from submission to its end (`now` = the period's end while it runs)."""
    if job.start_time is None:
        return None
    end = job.end_time if job.end_time is not None else period.end_ms
    return Interval(job.start_time, end).clip(period)


def run_usage(jobs: Iterable[JobDetails], period: Interval) -> list[RunUsage]:
    """Node-hours of every run with an attempt in the period, newest first."""
    runs: dict[str, RunUsage] = {}
    for job in jobs:
        attempt = attempt_of(job)
        if attempt is None:  # a supervisor, an export or a stage job: CPU only
            continue
        usage = AttemptUsage(
            submission_id=job.submission_id or job.job_id or "?",
            attempt=attempt,
            status=job.status.value,
            nodes=_nodes_of(job),
            interval=attempt_interval(job, period),
        )
        if usage.interval is None:
            continue
        run = runs.setdefault(run_of(job), RunUsage(run_of(job)))
        if not run.attempts or attempt >= max(a.attempt for a in run.attempts):
            run.recipe = metadata_of(job).recipe
        run.attempts.append(usage)
    for r in runs.values():
        r.attempts.sort(key=lambda a: a.attempt)
    return sorted(
        runs.values(),
        key=lambda r: min(a.interval.start_ms for a in r.attempts if a.interval),
        reverse=True,
    )


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for i in sorted(intervals, key=lambda i: i.start_ms):
        if merged and i.start_ms <= merged[-1].end_ms:
            last = merged[-1]
            merged[-1] = Interval(last.start_ms, max(last.end_ms, i.end_ms))
        else:
            merged.append(i)
    return merged


def _overlap_ms(interval: Interval, busy: Sequence[Interval]) -> int:
    return sum(
        max(0, min(interval.end_ms, b.end_ms) - max(interval.start_ms, b.start_ms)) for b in busy
    )


def gpu_node_intervals(nodes: Iterable[dict[str, Any]], period: Interval) -> list[Interval]:
    """When each GPU worker node was alive, within the period (the head never counts)."""
    out = []
    for n in nodes:
        gpus = float((n.get("resources_total") or {}).get("GPU", 0) or 0)
        if n.get("is_head_node") or gpus <= 0:
            continue
        start = int(n.get("start_time_ms") or 0)
        if not start:
            continue
        alive = n.get("state") == "ALIVE"
        end = period.end_ms if alive else int(n.get("end_time_ms") or 0)
        clipped = Interval(start, end).clip(period) if end else None
        if clipped is not None:
            out.append(clipped)
    return out


def idle_node_hours(
    nodes: Iterable[dict[str, Any]], jobs: Iterable[JobDetails], period: Interval
) -> float:
    """GPU node-hours in the period during which no attempt of any run was running."""
    busy = _union(
        i
        for j in jobs
        if attempt_of(j) is not None and (i := attempt_interval(j, period)) is not None
    )
    idle_ms = sum(
        (i.end_ms - i.start_ms) - _overlap_ms(i, busy) for i in gpu_node_intervals(nodes, period)
    )
    return idle_ms / MS_PER_HOUR


@dataclass(frozen=True)
class CostReport:
    """What `rl-jobs cost` shows: runs, idle hours, and the price they are priced at."""

    period: Interval
    runs: list[RunUsage]
    idle_node_hours: float
    node_hour_usd: float | None
    price_source: str

    def usd(self, node_hours: float | None) -> float | None:
        if node_hours is None or self.node_hour_usd is None:
            return None
        return node_hours * self.node_hour_usd

    def view(self) -> dict[str, Any]:
        """A JSON-ready view (hours and dollars to 6 places: a short attempt is not rounded away)."""

        def r2(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        return {
            "period": {"start_ms": self.period.start_ms, "end_ms": self.period.end_ms},
            "node_hour_usd": self.node_hour_usd,
            "price_source": self.price_source,
            "runs": [
                {
                    "run": r.run,
                    "recipe": r.recipe,
                    "node_hours": r2(r.node_hours),
                    "usd": r2(self.usd(r.node_hours)),
                    "gpu_hours": r2(r.gpu_hours),
                    "attempts": [
                        {
                            "submission_id": a.submission_id,
                            "attempt": a.attempt,
                            "status": a.status,
                            "nodes": a.nodes,
                            "hours": r2(a.interval.hours if a.interval else 0.0),
                            "node_hours": r2(a.node_hours),
                        }
                        for a in r.attempts
                    ],
                }
                for r in self.runs
            ],
            "idle_node_hours": r2(self.idle_node_hours),
            "idle_usd": r2(self.usd(self.idle_node_hours)),
            "total_node_hours": r2(self.total_node_hours),
            "total_usd": r2(self.usd(self.total_node_hours)),
        }

    @property
    def total_node_hours(self) -> float | None:
        hours = [r.node_hours for r in self.runs]
        if any(h is None for h in hours):
            return None
        return sum(h or 0.0 for h in hours) + self.idle_node_hours


def report(
    jobs: Sequence[JobDetails],
    nodes: Sequence[dict[str, Any]],
    period: Interval,
    node_hour_usd: float | None,
    price_source: str,
) -> CostReport:
    return CostReport(
        period=period,
        runs=run_usage(jobs, period),
        idle_node_hours=idle_node_hours(nodes, jobs, period),
        node_hour_usd=node_hour_usd,
        price_source=price_source,
    )


NO_PRICE = (
    "no price: the stack was deployed by an older version of this program, which did not export"
    " prices (`pulumi up` with this version exports them), and --node-hour-usd is not given"
)


def period_since(since: str | None, now_ms: int) -> Interval:
    """`--since` as `list` takes it (`36h`, `30m`, `7d` ago, or a UTC date/time) -> [then, now];
    None -> everything the head remembers."""
    if since is None:
        return Interval(0, now_ms)
    start = list_filter.since_ms(since, now_ms / 1000)
    if start >= now_ms:
        raise UsageError(
            f"--since {since!r} is not in the past",
            "give a time ago (e.g. --since 36h) or an earlier date",
        )
    return Interval(max(0, start), now_ms)


def price_of(outputs: StackOutputs | None, override_usd: float | None) -> tuple[float | None, str]:
    """The node-hour price to use and its source: --node-hour-usd, else the stack's export."""
    if override_usd is not None:
        if override_usd <= 0:
            raise UsageError(
                f"--node-hour-usd {override_usd:g} is not a price",
                "give the USD price of one GPU node-hour, above 0",
            )
        return override_usd, "--node-hour-usd"
    if outputs is not None and outputs.gpu_node_hour_usd is not None:
        return outputs.gpu_node_hour_usd, outputs.gpu_node_hour_source or "stack outputs"
    return None, NO_PRICE
