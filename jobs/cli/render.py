"""How `recipes` and `list` lay out on a terminal: blocks that wrap at spaces, ids never cut.

Wide multi-column tables broke recipe names, run names and submission ids mid-word below 120
columns. Each recipe and each run is a block instead: its name on a line of its own, details
indented under it (wrapped at spaces), and attempts in a two-column table (submission id,
status) that fits 80 columns with any run name the CLI accepts (63 characters).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from jobs.common.redact import redact
from jobs.runs import list_progress


def _indented(text: str | Text, level: int = 1) -> Padding:
    return Padding(
        text if isinstance(text, Text) else Text(text), (0, 0, 0, 2 * level), expand=False
    )


def recipes(views: list[dict[str, Any]]) -> RenderableType:
    """One block per recipe: name, framework and size, image, summary, defaults."""
    blocks: list[RenderableType] = []
    for v in views:
        head = Text(v["name"], style="bold")
        head.append(
            f"  {v['framework']} {v['framework_version']}, {v['default_nodes']} x "
            f"{v['default_gpus_per_node']} GPU"
            + (", batch sizes adapt" if v["adapts_batch_sizes"] else "")
        )
        blocks += [
            head,
            _indented(f"image {v['image']}"),
            _indented(v["summary"]),
            _indented("defaults:"),
        ]
        blocks += [_indented(f"{k}={val}", 2) for k, val in v["defaults"].items()]
        blocks.append(Text(""))
    return Group(*blocks)


def runs(views: list[dict[str, Any]]) -> RenderableType:
    """One block per run: name, status and recipe; its attempts; its supervisor."""
    if not views:
        return Text("no runs on this cluster")
    blocks: list[RenderableType] = []
    for r in views:
        head = Text(r["run"], style="bold")
        head.append(f"  {r['status']}")
        blocks.append(head)
        # Details on an indented line of their own: wrapped after a 63-character name, a
        # recipe at the line's start read as a second run.
        details = [f"recipe {r['recipe']}"] if r["recipe"] else []
        if step := list_progress.step_text(r.get("step"), r.get("of")):
            details.append(step)
        if r.get("duration_s") is not None:
            details.append(list_progress.human_duration(r["duration_s"]))
        if r.get("eval"):
            details.append(f"eval {r['eval']}")
        if details:
            blocks.append(_indented("  ".join(details)))
        if r["attempts"]:
            table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
            for col in ("submission id", "status"):
                # Ids are copied into other commands: never wrapped or cut. The attempt number
                # is the id's -aN, so no column of its own: 2 + 66 + 1 + 9 columns fit 80.
                table.add_column(col, no_wrap=True)
            for a in r["attempts"]:
                table.add_row(a["submission_id"] or "", a["status"])
            blocks.append(Padding(table, (0, 0, 0, 2), expand=False))
        sup = r.get("supervisor")
        if sup:
            last = sup.get("last_event")
            # Gave up: the Ray job's SUCCEEDED would read as the run's success.
            shown = "GAVE_UP" if sup.get("outcome") == "gave_up" else sup["status"]
            note = f"supervisor {sup['submission_id']} {shown}" + (
                f": {last['message']}" if last else ""
            )
            blocks.append(_indented(note))
    return Group(*blocks)


def recorded_runs(rows: list[dict[str, Any]], root: str) -> RenderableType:
    """`list --runs-root`: one block per run, as `list` draws a cluster's runs: name, state, step
    and time; its attempts by their suffix (`a2 FAILED (preempted)`: the run's name is the block's
    first word, and a short id is never broken); its last decision. Lines wrap at word
    boundaries, so nothing is cut at 80 columns (a terminal's usual width)."""
    if not rows:
        return Text(f"no runs recorded in {root}")
    blocks: list[RenderableType] = [Text(f"runs recorded in {root}")]
    for r in rows:
        head = Text(r["run"], style="bold")
        head.append(f"  {r['status']}")
        if step := list_progress.step_text(r.get("step"), r.get("of")):
            head.append(f"  {step}")
        if r.get("duration_s") is not None:
            head.append(f"  {list_progress.human_duration(r['duration_s'])}")
        blocks.append(head)
        if r.get("eval"):
            blocks.append(_indented(f"eval {r['eval']}"))
        attempts = ", ".join(
            f"{a['submission_id'].removeprefix(r['run'] + '-')} {a['status']}"
            + (f" ({a['cause']})" if a["cause"] else "")
            for a in r["attempts"]
        )
        blocks.append(_indented(attempts or "no attempt yet"))
        if r["last_event"]:
            blocks.append(_indented(f"last: {redact(r['last_event']['message'])}"))
    return Group(*blocks)
