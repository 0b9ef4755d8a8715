"""The report's first screen: the run's story (its state, outcome and cause, progress, goodput and cost) and each attempt's end in a line.

A reader opens the report to learn what became of the run before how its curves went: the
summary is what `status` says first, and each attempt's end is one line (why it ended, the step
it reached, how long it ran) with its log's tail folded beneath it. Pure: it renders what
jobs/runs/run_report.py gathered.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.common.redact import redact
from jobs.head import events as ev
from jobs.head import progress
from jobs.runs import goodput, list_progress, listing, metrics

# A state's colour, as the timeline draws its attempts' bars.
STATE_COLOUR = {
    "SUCCEEDED": "#2e7d32",
    "FAILED": "#c62828",
    "STOPPED": "#757575",
    "RUNNING": "#1565c0",
    "PENDING": "#f9a825",
    "WAITING": "#f9a825",
    "UNSUPERVISED": "#6d4c41",
}
_CAUSES = {ev.PREEMPTED: "preempted", ev.STALLED: "stalled"}
# A log's tail in the fold: enough for a traceback's last frames and its error.
TAIL_LINES = 25


@dataclass(frozen=True)
class AttemptEnd:
    """One attempt as its end line tells it."""

    submission_id: str
    status: str
    seconds: float | None  # from its submission to its end (or now)
    step: int | None  # the highest step it logged
    why: str  # Ray's word on its end, or the supervisor's cause
    log_tail: str | None  # None: its log was lost with its node (`lost` says so)
    lost: str = ""


def cause_of(decisions: Sequence[Mapping[str, Any]], submission_id: str) -> str:
    """What the supervisor recorded as the attempt's cause: preempted, stalled, or nothing."""
    causes = [
        _CAUSES[str(d.get("event"))]
        for d in decisions
        if d.get("submission_id") == submission_id and d.get("event") in _CAUSES
    ]
    return causes[-1] if causes else ""


def why_it_ended(message: str, status: str, cause: str) -> str:
    """One line on the attempt's end: the supervisor's cause, then the error Ray's message ends
    on (its first line when it names none)."""
    first, error = listing.why_it_ended(message) if message else ("", None)
    label, said = listing.labelled(progress.clean(error)) if error else ("", first)
    if label and label != "error":
        # The log's last line is no error (a step line): Ray's own words say how it ended.
        said = first.split(", last available logs")[0]
    if status in ("RUNNING", "PENDING"):
        said = ""
    return "; ".join(p for p in (cause, said) if p)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _duration(seconds: float | None) -> str:
    return "" if seconds is None else f" after {list_progress.human_duration(seconds)}"


def ends_html(ends: Sequence[AttemptEnd]) -> str:
    """Each attempt's end in one line, its log's tail behind a fold."""
    if not ends:
        return '<p class="note">No attempt has been sent yet.</p>'
    items = []
    for a in ends:
        line = f"{a.submission_id} {a.status}{_duration(a.seconds)}"
        if a.step is not None:
            line += f", step {a.step}"
        if a.why:
            line += f": {a.why}"
        if a.log_tail is None:
            fold = f'<p class="note">{html.escape(redact(a.lost))}</p>'
        elif a.log_tail.strip():
            fold = (
                f"<details><summary>log tail</summary>"
                f"<pre>{html.escape(redact(a.log_tail))}</pre></details>"
            )
        else:
            fold = ""
        colour = STATE_COLOUR.get(a.status, "#555")
        items.append(
            f'<li data-attempt="{html.escape(a.submission_id)}">'
            f'<span class="dot" style="background:{colour}"></span>'
            f"{html.escape(redact(line))}{fold}</li>"
        )
    return f'<ol class="ends">{"".join(items)}</ol>'


def summary_html(
    run: str,
    status: str,
    outcome: str,
    progress: Mapping[str, Any] | None,
    spent: Mapping[str, Any] | None,
    ends: Sequence[AttemptEnd],
) -> str:
    """The run's state, outcome and cause, progress, goodput and cost: what `status` says first."""
    colour = STATE_COLOUR.get(status, "#555")
    facts = []
    if outcome:
        facts.append(("outcome", outcome))
    if progress:
        facts.append(("progress", metrics.progress_line(dict(progress))))
    for n, text in enumerate(goodput.lines_of(spent)):
        facts.append(("goodput" if n == 0 else "", text))
    preempted = sum(1 for a in ends if "preempted" in a.why)
    facts.append(
        (
            "attempts",
            f"{len(ends)}" + (f", {preempted} preempted" if preempted else ""),
        )
    )
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(redact(v))}</td></tr>" for k, v in facts
    )
    return (
        f'<section id="story"><h1>Run {html.escape(run)}</h1>'
        f'<p class="state"><span class="badge" style="background:{colour}">'
        f"{html.escape(status)}</span></p>"
        f'<div class="scroll"><table class="facts">{rows}</table></div></section>'
    )
