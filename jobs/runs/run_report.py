"""`rl-jobs report`: one self-contained HTML page of a run -- its curves, its attempts, its GPU-hours.

The page loads nothing: no script, no stylesheet, no image from anywhere; the plots are inline
SVG drawn here, so it opens offline and can be mailed or kept next to the run. Its one outward
link is the run's W&B page, when the run logged to W&B (a plain `<a href>`, never fetched).
`gather` reads the run from Ray's job records and logs; `render` is pure.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobDetails
from jobs.common.redact import redact
from jobs.head import events as ev
from jobs.runs import (
    eval_results,
    goodput,
    handoff,
    listing,
    metrics,
    report_story,
    run_goodput,
    run_step,
    state,
)
from jobs.runs.attempt_logs import AttemptLogs
from jobs.runs.metadata import RecipeRun

MS_PER_HOUR = 3_600_000


@dataclass(frozen=True)
class Attempt:
    """One attempt as the timeline shows it."""

    attempt: int
    submission_id: str
    status: str
    start_ms: int | None
    end_ms: int | None
    message: str = ""
    gpus: int | None = None  # nodes x GPUs per node, when the attempt recorded them
    # Saves the attempt's log shows (step, when): the log has no clock, so the moment is counted
    # back from the attempt's end by the step times logged after the save (save_times).
    saves: list[tuple[int, int]] = field(default_factory=list)

    def hours(self, now_ms: int) -> float:
        if self.start_ms is None:
            return 0.0
        return max(0, (self.end_ms or now_ms) - self.start_ms) / MS_PER_HOUR


@dataclass
class RunReport:
    run: str
    recipe: str = ""
    framework: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    curves: metrics.Curves = field(default_factory=metrics.Curves)
    wandb: bool = False
    now_ms: int = 0
    goodput: dict[str, Any] | None = None  # goodput.Goodput.as_json() of the run's life
    # The supervisors' records (jobs/head/events.py), drawn on the timeline's own row.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    # Attempts whose log Ray could not give (gone with their node): submission id -> why.
    unreadable_logs: dict[str, str] = field(default_factory=dict)
    # The run's state and the outcome's words, as `status` says them (jobs/runs/state.py).
    status: str = ""
    outcome: str = ""
    progress: dict[str, Any] | None = None
    ends: list[report_story.AttemptEnd] = field(default_factory=list)
    # Held-out scores from the run's eval jobs (`rl-jobs eval`), steps in order.
    evals: list[eval_results.EvalResult] = field(default_factory=list)

    @property
    def gpu_hours(self) -> float | None:
        """The GPU-hours of the run's life, as `status` and `cost` count them (its goodput's
        total); None when nothing says how many GPUs it has."""
        hours = (self.goodput or {}).get("gpu_hours")
        return None if hours is None else sum(hours.values())


def wandb_configured(entrypoint: str, overrides: Sequence[str]) -> bool:
    """Whether the attempt logs to W&B: NeMo RL's `logger.wandb_enabled=true`, or veRL's
    `trainer.logger` naming wandb, in what was sent (what `rl-jobs submit` renders when the
    stack has a wandbApiKey: jobs/recipes/catalogue.py _NEMO_WANDB, _VERL_RUN wandb_settings)."""
    said = [entrypoint, *overrides]
    return any(
        "logger.wandb_enabled=true" in s.lower()
        or ("trainer.logger=" in s and "wandb" in s.split("trainer.logger=", 1)[1].split(" ")[0])
        for s in said
    )


def _attempt(job: JobDetails) -> Attempt:
    recorded = RecipeRun.of_job(job.metadata)
    return Attempt(
        attempt=listing.attempt_of(job) or 0,
        submission_id=job.submission_id or job.job_id or "?",
        status=job.status.value,
        start_ms=job.start_time,
        end_ms=job.end_time,
        message=redact(job.message or ""),
        gpus=recorded.nodes * recorded.gpus_per_node if recorded else None,
    )


def save_times(curves: metrics.Curves, end_ms: int) -> list[tuple[int, int]]:
    """Each save in one attempt's curves with its estimated moment: its end counted back from the
    attempt's end by the logged times of the steps after it (no step time: at the end)."""
    times = dict(curves.series("step_time"))
    return [
        (step, int(end_ms - 1000 * sum(t for s, t in times.items() if s > step)))
        for step in sorted(curves.saves)
    ]


def gather(cluster: Dashboard, run: str, where: str = "", outputs: Any = None) -> RunReport:
    """The run named `run` (or the run of the attempt with that submission id), read from the
    head: every attempt's record and log, curves merged in attempt order; its cost priced by
    the stack's `outputs` when given."""
    job = listing.find(cluster, run, where)
    name = listing.run_of(job)
    tried = listing.attempts(cluster.jobs(), name) or [job]
    latest = tried[-1]
    recorded = RecipeRun.of_job(latest.metadata)
    report = RunReport(
        run=name,
        recipe=listing.metadata_of(latest).recipe,
        framework=recorded.framework if recorded else "",
        now_ms=int(time.time() * 1000),
    )
    logs = AttemptLogs(cluster.logs)  # each attempt's log fetched once: curves, goodput, saves
    for attempt in tried:
        shown = _attempt(attempt)
        if shown.start_ms is not None:
            own = metrics.parse(logs(attempt.submission_id or ""))
            shown = replace(shown, saves=save_times(own, shown.end_ms or report.now_ms))
        report.attempts.append(shown)
        meta = RecipeRun.of_job(attempt.metadata)
        report.wandb |= wandb_configured(attempt.entrypoint or "", meta.overrides if meta else [])
    _, records = handoff.story(cluster, name)
    report.decisions = records
    found = state.find(cluster.jobs(), name)
    ended = found.ended if found is not None else None
    spent, report.curves = run_goodput.of_run(tried, records, logs, ended or report.now_ms)
    report.goodput = goodput.priced(spent.as_json(), outputs)
    report.unreadable_logs = logs.unreadable
    final = handoff.final_reason(records)
    report.status = state.shown_status(found, (final or {}).get("event")) if found else ""
    report.progress = run_step.reached(metrics.progress(report.curves), records)
    report.ends = [_end(a, logs, records, report) for a in report.attempts]
    report.outcome = final["message"] if final else (report.ends[-1].why if report.ends else "")
    mine = [j for j in cluster.jobs() if listing.run_of(j) == name]
    report.evals = eval_results.of_jobs(mine, cluster.logs)
    return report


def _end(
    a: Attempt, logs: AttemptLogs, records: list[dict[str, Any]], report: RunReport
) -> report_story.AttemptEnd:
    """One attempt's end line: its cause, the step it reached, its log's tail (or why not)."""
    lost = report.unreadable_logs.get(a.submission_id, "")
    text = "" if lost or a.start_ms is None else logs(a.submission_id)
    own = metrics.progress(metrics.parse(text)) if text else None
    recorded = run_step.recorded(r for r in records if r.get("submission_id") == a.submission_id)
    step = max((s for s in ((own or {}).get("step"), recorded) if s is not None), default=None)
    cause = report_story.cause_of(records, a.submission_id)
    return report_story.AttemptEnd(
        submission_id=a.submission_id,
        status=a.status,
        seconds=None if a.start_ms is None else a.hours(report.now_ms) * 3600,
        step=step,
        why=report_story.why_it_ended(a.message, a.status, cause),
        log_tail=None if lost else report_story.tail(text),
        lost=lost,
    )


# ---- rendering (pure) ----

W, H = 640, 220
PAD_L, PAD_R, PAD_T, PAD_B = 64, 16, 12, 34
_STATUS_COLOUR = {
    "SUCCEEDED": "#2e7d32",
    "FAILED": "#c62828",
    "STOPPED": "#757575",
    "RUNNING": "#1565c0",
    "PENDING": "#f9a825",
}

# Readable on a phone (390 px wide): plots and the timeline shrink to the width, tables scroll
# inside their box, a log's lines wrap; nothing makes the page wider than the screen.
_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1360px}
h1{font-size:22px;overflow-wrap:anywhere}h2{font-size:15px;margin:0 0 4px}
.grid{display:flex;flex-wrap:wrap;gap:16px}
figure.plot{margin:0;border:1px solid #ddd;border-radius:6px;padding:8px;background:#fff;max-width:100%;box-sizing:border-box}
svg{max-width:100%;height:auto}svg text{font-size:11px;fill:#555}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
.scroll{overflow-x:auto;max-width:100%}
.facts td{overflow-wrap:anywhere}
.badge{color:#fff;font-weight:600;padding:4px 12px;border-radius:4px;display:inline-block}
ol.ends{padding-left:20px;font-size:14px}ol.ends li{margin:0 0 8px;overflow-wrap:anywhere}
.dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:6px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;background:#f5f5f5;padding:6px}
.note{color:#666;font-size:13px}
@media (max-width:600px){body{margin:10px}}
"""


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def plot_svg(metric: str, points: Sequence[tuple[int, float]]) -> str:
    """A line plot of (step, value) as inline SVG: one `<circle class="pt">` per point."""
    title, unit = metrics.title_of(metric)
    steps = [s for s, _ in points]
    values = [v for _, v in points]
    x0, x1 = min(steps), max(steps)
    y0, y1 = min(values), max(values)
    if y1 == y0:  # a flat line: give it room
        y0, y1 = y0 - (abs(y0) or 1) * 0.05, y1 + (abs(y1) or 1) * 0.05
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1

    def x(step: float) -> float:
        return PAD_L + (step - x0) / (x1 - x0) * (W - PAD_L - PAD_R)

    def y(value: float) -> float:
        return PAD_T + (y1 - value) / (y1 - y0) * (H - PAD_T - PAD_B)

    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
    dots = "".join(
        f'<circle class="pt" cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5" '
        f'data-step="{s}" data-value="{v!r}"><title>step {s}: {_fmt(v)}</title></circle>'
        for s, v in points
    )
    left, bottom = PAD_L, H - PAD_B
    axes = (
        f'<line x1="{left}" y1="{PAD_T}" x2="{left}" y2="{bottom}" stroke="#999"/>'
        f'<line x1="{left}" y1="{bottom}" x2="{W - PAD_R}" y2="{bottom}" stroke="#999"/>'
        f'<text x="{left - 6}" y="{PAD_T + 10}" text-anchor="end">{_fmt(y1)}</text>'
        f'<text x="{left - 6}" y="{bottom}" text-anchor="end">{_fmt(y0)}</text>'
        f'<text x="{left}" y="{bottom + 16}">{x0 if len(points) > 1 else steps[0]}</text>'
        f'<text x="{W - PAD_R}" y="{bottom + 16}" text-anchor="end">'
        f"{x1 if len(points) > 1 else steps[0]}</text>"
        f'<text x="{(left + W - PAD_R) / 2:.0f}" y="{H - 4}" text-anchor="middle">step</text>'
    )
    label = html.escape(f"{title} ({unit})" if unit else title)
    return (
        f'<figure class="plot" data-metric="{html.escape(metric)}" data-points="{len(points)}">'
        f"<h2>{label}</h2>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" role="img" aria-label="{label}">'
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>{axes}'
        f'<polyline fill="none" stroke="#1565c0" stroke-width="2" points="{line}"/>{dots}'
        "</svg></figure>"
    )


# The supervisor's records drawn on the timeline: what interrupted the run, what it waited for.
_MARKED = {
    ev.PREEMPTED: "#c62828",
    ev.STALLED: "#6a1b9a",
    ev.REARMED: "#00838f",
    ev.INTERRUPTED: "#00838f",
    ev.GAVE_UP: "#c62828",
    ev.STOPPED: "#757575",
    ev.FINISHED: "#2e7d32",
}
_WAITS = {ev.WAITING: "capacity", ev.SETTLING: "settle"}


def _decision_marks(
    decisions: Sequence[dict[str, Any]], row_y: int, x: Callable[[int], float], t1: int
) -> list[str]:
    """Capacity waits and settles as grey spans (to the next record), interruptions and ends as
    ticks, each with its record's message as a tooltip."""
    timed = sorted(
        ((at, d) for d in decisions if (at := goodput.record_ms(d)) is not None), key=lambda p: p[0]
    )
    out = []
    for i, (at, d) in enumerate(timed):
        event = str(d.get("event"))
        tip = html.escape(redact(f"{_when(at)} {event}: {d.get('message', '')}"))
        if event in _WAITS:
            until = timed[i + 1][0] if i + 1 < len(timed) else t1
            out.append(
                f'<g class="decision" data-event="{event}"><rect x="{x(at):.1f}" y="{row_y + 6}" '
                f'width="{max(2.0, x(until) - x(at)):.1f}" height="14" fill="#bdbdbd">'
                f"<title>{tip}</title></rect></g>"
            )
        elif event in _MARKED:
            out.append(
                f'<g class="decision" data-event="{event}"><rect x="{x(at) - 1.5:.1f}" '
                f'y="{row_y + 2}" width="3" height="22" fill="{_MARKED[event]}">'
                f"<title>{tip}</title></rect></g>"
            )
    return out


def timeline_svg(
    attempts: Sequence[Attempt], now_ms: int, decisions: Sequence[dict[str, Any]] = ()
) -> str:
    """One bar per attempt from its submission to its end (now, while it runs), and a row of the
    supervisor's decisions: capacity waits, settles, preemptions, stalls, re-arms, the end."""
    spans = [(a, a.start_ms, a.end_ms or now_ms) for a in attempts if a.start_ms is not None]
    if not spans:
        return '<p class="note">No attempt has started yet.</p>'
    t0 = min(s for _, s, _ in spans)
    t1 = max([e for _, _, e in spans] + [m for d in decisions if (m := goodput.record_ms(d))])
    width = max(1, t1 - t0)
    row = 26

    def x(at: int) -> float:
        return PAD_L + (max(at, t0) - t0) / width * (W - PAD_L - PAD_R)

    marks = _decision_marks(decisions, row * len(spans), x, t1) if decisions else []
    height = row * (len(spans) + (1 if marks else 0)) + 24
    bars = []
    if marks:
        bars.append(
            f'<text x="{PAD_L - 6}" y="{len(spans) * row + 17}" text-anchor="end">supervisor</text>'
        )
        bars += marks
    for i, (a, start, end) in enumerate(spans):
        bx = PAD_L + (start - t0) / width * (W - PAD_L - PAD_R)
        bw = max(2.0, (end - start) / width * (W - PAD_L - PAD_R))
        colour = _STATUS_COLOUR.get(a.status, "#555")
        bars.append(
            f'<g class="attempt" data-attempt="{a.attempt}" data-status="{html.escape(a.status)}">'
            f'<text x="{PAD_L - 6}" y="{i * row + 17}" text-anchor="end">a{a.attempt}</text>'
            f'<rect x="{bx:.1f}" y="{i * row + 4}" width="{bw:.1f}" height="18" '
            f'fill="{colour}"><title>{html.escape(a.submission_id)} {html.escape(a.status)}'
            f"</title></rect></g>"
        )
        bars += [
            f'<g class="save" data-attempt="{a.attempt}" data-step="{step}">'
            f'<rect x="{x(at) - 1:.1f}" y="{i * row + 2}" width="2" height="22" fill="#263238">'
            f"<title>save of step {step} (its moment estimated from the step times logged "
            f"after it), {html.escape(_when(at))}</title></rect></g>"
            for step, at in a.saves
        ]
    hours = (t1 - t0) / MS_PER_HOUR
    axis = (
        f'<text x="{PAD_L}" y="{height - 4}">{html.escape(_when(t0))}</text>'
        f'<text x="{W - PAD_R}" y="{height - 4}" text-anchor="end">+{hours:.2f} h</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{W}" '
        f'height="{height}" viewBox="0 0 {W} {height}">{"".join(bars)}{axis}</svg>'
    )


def _attempt_table(report: RunReport) -> str:
    startups = {s["submission_id"]: s for s in (report.goodput or {}).get("startups", [])}
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(c))}</td>"
            for c in (
                a.attempt,
                a.submission_id,
                a.status,
                _when(a.start_ms),
                _when(a.end_ms),
                f"{a.hours(report.now_ms):.2f}",
                goodput.startup_text(startups[a.submission_id])
                if a.submission_id in startups
                else "-",
                "?" if a.gpus is None else a.gpus,
                "; ".join(m for m in (a.message, report.unreadable_logs.get(a.submission_id)) if m),
            )
        )
        + "</tr>"
        for a in report.attempts
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "attempt",
            "submission id",
            "status",
            "start",
            "end",
            "hours",
            "start-up",
            "GPUs",
            "message",
        )
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _goodput_html(report: RunReport) -> str:
    """Where the run's life went, bucket by bucket (jobs/runs/goodput.py)."""
    spent = report.goodput
    if not spent or spent.get("percent") is None:
        return ""
    gpu_hours = spent.get("gpu_hours")
    rows = "".join(
        f"<tr><td>{html.escape(bucket)}</td><td>{spent['seconds'][bucket] / 3600:.2f}</td>"
        f"<td>{'-' if not gpu_hours else f'{gpu_hours[bucket]:.2f}'}</td></tr>"
        for bucket in goodput.BUCKETS
    )
    return (
        f'<h2 style="margin-top:16px">Goodput: {spent["percent"]:.0f}% productive</h2>'
        f"<table><tr><th>bucket</th><th>hours</th><th>GPU-hours</th></tr>{rows}</table>"
    )


def _eval_html(report: RunReport) -> str:
    """The held-out scores: a table, and a plot over steps when several were evaluated."""
    if not report.evals:
        return ""
    head = "".join(f"<th>{c}</th>" for c in ("step", "data", "metric", "score", "problems"))
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in eval_results.table(report.evals)
    )
    line = eval_results.summary(report.evals) or ""
    steps = [r for r in report.evals if r.step is not None and r.comparable(report.evals[0])]
    plot = (
        plot_svg("held-out score", [(r.step or 0, r.score) for r in steps])
        if len(steps) > 1
        else ""
    )
    return (
        f'<h2 style="margin-top:16px">Held-out evaluation: {html.escape(line)}</h2>'
        f"<table><tr>{head}</tr>{rows}</table>{plot}"
    )


def _wandb_html(report: RunReport) -> str:
    urls = [u for u in report.curves.wandb_urls if u.startswith("https://")]
    if urls:
        links = ", ".join(f'<a href="{html.escape(u)}">{html.escape(u)}</a>' for u in urls)
        return f"<p>W&amp;B: {links}</p>"
    if report.wandb:
        return (
            '<p class="note">W&amp;B is on for this run, but its log shows no run page yet '
            f"(look for the run named {html.escape(report.run)} in its project).</p>"
        )
    return ""


def render(report: RunReport) -> str:
    """The whole page, as one string."""
    present = report.curves.present()
    plots = "".join(plot_svg(m, report.curves.series(m)) for m in present)
    if not plots:
        plots = (
            '<p class="note">No step lines in the attempts\' logs yet (NeMo RL prints a '
            "block per step, veRL a <code>step:N - ...</code> line).</p>"
        )
    gpu_hours = report.gpu_hours
    facts = {
        "run": report.run,
        "recipe": report.recipe or "-",
        "framework": report.framework or "-",
        "attempts": str(len(report.attempts)),
        "GPU-hours (life)": "? (nothing says how many GPUs it has)"
        if gpu_hours is None
        else f"{gpu_hours:.2f}",
        "generated": _when(report.now_ms),
    }
    fact_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts.items()
    )
    data = json.dumps({m: report.curves.series(m) for m in present}, separators=(",", ":")).replace(
        "</", "<\\/"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(f'run {report.run}')}</title>"
        f"<style>{_STYLE}</style></head><body>"
        + report_story.summary_html(
            report.run,
            report.status,
            report.outcome,
            report.progress,
            report.goodput,
            report.ends,
        )
        + f'<h2 style="margin-top:16px">How each attempt ended</h2>'
        f"{report_story.ends_html(report.ends)}"
        f"{timeline_svg(report.attempts, report.now_ms, report.decisions)}"
        f'<div class="scroll">{_eval_html(report)}</div>'
        f'<h2 style="margin-top:16px">Curves</h2><div class="grid">{plots}</div>'
        f'<h2 style="margin-top:16px">Attempts</h2>'
        f'<div class="scroll">{_attempt_table(report)}</div>'
        f'<div class="scroll"><table>{fact_rows}</table></div>{_wandb_html(report)}'
        f"{_goodput_html(report)}"
        # The numbers behind the plots, for a reader who wants them (not executed: JSON data).
        f'<script type="application/json" id="curves">{data}</script>'
        "</body></html>\n"
    )
