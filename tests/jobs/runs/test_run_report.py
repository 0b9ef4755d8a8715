"""The HTML page `rl-jobs report` writes: self-contained, one plot per curve, every point drawn."""

from __future__ import annotations

import re

import pytest

from jobs.runs import goodput, metrics, run_report
from tests.jobs.html_page import Page
from tests.jobs.runs.framework_lines import ray_actor_prefix, verl_step_line


def _report(steps: int, wandb_url: str = "", wandb: bool = False) -> run_report.RunReport:
    lines = [
        ray_actor_prefix(
            verl_step_line(
                {
                    "critic/score/mean": 0.1 * s,
                    "actor/kl_loss": 0.01 * s,
                    "timing_s/step": 10.0 + s,
                },
                s,
            )
        )
        for s in range(1, steps + 1)
    ]
    if wandb_url:
        lines.insert(0, f"wandb: 🚀 View run r1 at: {wandb_url}")
    attempts = [
        run_report.Attempt(1, "r1-a1", "FAILED", 1_000_000, 1_000_000 + 1_800_000, "preempted", 8),
        run_report.Attempt(2, "r1-a2", "RUNNING", 3_000_000, None, "", 8),
    ]
    return run_report.RunReport(
        run="r1",
        recipe="verl-grpo-gsm8k",
        framework="verl",
        attempts=attempts,
        curves=metrics.parse("\n".join(lines)),
        wandb=wandb,
        now_ms=3_000_000 + 3_600_000,
    )


def test_the_page_parses_loads_nothing_and_has_one_plot_per_curve_with_every_point() -> None:
    page = Page(run_report.render(_report(steps=7)))
    assert page.errors == []
    assert page.loads() == []
    assert page.links_out() == []
    assert all(a.get("type") == "application/json" for a in page.all("script"))
    plots = page.all("figure")
    assert [p["data-metric"] for p in plots] == ["reward", "kl", "step_time"]
    assert len(page.all("circle")) == 3 * 7
    assert {p["data-points"] for p in plots} == {"7"}


def test_the_timeline_has_a_bar_per_attempt_and_gpu_hours_count_both() -> None:
    report = _report(steps=2)
    page = Page(run_report.render(report))
    bars = page.all("g", **{"class": "attempt"})
    assert [(b["data-attempt"], b["data-status"]) for b in bars] == [
        ("1", "FAILED"),
        ("2", "RUNNING"),
    ]
    # The run's life, as `status` and `cost` count it: 8 GPUs from a1's start to now (0.5 h of
    # a1, the 0.33 h between the attempts, 1 h of a2 so far), not only the attempts' own time.
    traces = [goodput.AttemptTrace(a.submission_id, a.start_ms, a.end_ms) for a in report.attempts]
    report.goodput = goodput.account(traces, [], report.now_ms, 8).as_json()
    assert report.gpu_hours == pytest.approx(8 * (5_600_000 / 3_600_000), abs=0.01)
    report.goodput = goodput.account(traces, [], report.now_ms, None).as_json()
    assert report.gpu_hours is None  # nothing says how many GPUs: never a guess


def _at(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_timeline_draws_the_supervisors_waits_and_interruptions_in_time() -> None:
    """A timeline of attempts, preemptions and waits: the supervisor's records on a row
    of their own, a wait as a span to the next record, a preemption as a tick, in time order."""
    report = _report(steps=2)
    a1_end = 1_000_000 + 1_800_000
    report.decisions = [
        {"t": _at(a1_end), "event": "preempted", "message": "r1-a1 preempted: node n1 died"},
        {"t": _at(a1_end), "event": "waiting", "message": "waiting for 8 GPUs"},
        {"t": _at(a1_end + 100_000), "event": "settling", "message": "8 GPUs present"},
        {"t": _at(3_000_000), "event": "submitted", "message": "submitted r1-a2"},
        {"t": "not a time", "event": "stalled", "message": "unreadable: skipped"},
    ]
    text = run_report.render(report)
    page = Page(text)
    assert page.errors == []
    events, rects = [], []
    for i, (tag, attrs) in enumerate(page.tags):
        if tag == "g" and attrs.get("class") == "decision":
            events.append(attrs["data-event"])
            rects.append(next(a for t, a in page.tags[i + 1 :] if t == "rect"))
    assert events == ["preempted", "waiting", "settling"]
    xs = [float(r["x"]) for r in rects]
    assert xs[0] < xs[1] + 2 and xs[1] < xs[2]  # in time order, the tick centred on its moment
    # The capacity wait spans to the settle.
    assert xs[1] + float(rects[1]["width"]) == pytest.approx(xs[2], abs=0.2)
    assert "preempted: r1-a1 preempted: node n1 died</title>" in text


def test_a_run_logged_to_wandb_links_its_page_and_nothing_else_leaves_the_page() -> None:
    url = "https://wandb.ai/team/rl-on-gke/runs/ab12cd34"
    page = Page(run_report.render(_report(steps=3, wandb_url=url, wandb=True)))
    assert page.links_out() == [url]
    assert page.loads() == []


def test_wandb_switches_as_the_recipes_render_them_are_recognised() -> None:
    assert run_report.wandb_configured("uv run x.py logger.wandb_enabled=true", [])
    assert run_report.wandb_configured(
        'python3 -m verl.trainer.main_ppo \'trainer.logger=["console","tensorboard","wandb"]\'', []
    )
    assert not run_report.wandb_configured(
        'python3 -m verl.trainer.main_ppo \'trainer.logger=["console","tensorboard"]\' x=wandb', []
    )
    assert run_report.wandb_configured("", ["logger.wandb_enabled=True"])


def test_a_run_without_step_lines_says_so_rather_than_drawing_empty_plots() -> None:
    report = _report(steps=0)
    text = run_report.render(report)
    assert Page(text).all("figure") == []
    assert "No step lines" in text


def test_text_from_the_logs_is_escaped() -> None:
    report = _report(steps=1)
    report.attempts[0] = run_report.Attempt(1, "r1-a1", "FAILED", 1, 2, "<script>x</script>", 8)
    page = Page(run_report.render(report))
    assert page.errors == []
    assert all(a.get("type") == "application/json" for a in page.all("script"))


def test_saves_sit_on_their_attempts_bar_counted_back_from_its_end() -> None:
    curves = metrics.Curves()
    for step in (1, 2, 3, 4):
        curves.add("step_time", step, 100.0)
    curves.saves = {2, 4}
    end = 1_000_000
    # save 2: steps 3 and 4 (200 s) ran after it; save 4: the last step, at the end
    assert run_report.save_times(curves, end) == [(2, end - 200_000), (4, end)]
    attempt = run_report.Attempt(
        1, "r-a1", "FAILED", end - 600_000, end, saves=[(2, end - 200_000)]
    )
    page = Page(run_report.timeline_svg([attempt], end))
    [mark] = page.all("g", **{"class": "save"})
    assert (mark["data-attempt"], mark["data-step"]) == ("1", "2")


def test_the_attempts_table_gives_each_attempts_start_up_as_status_does() -> None:
    report = _report(steps=2)
    traces = [
        goodput.AttemptTrace("r1-a1", 1_000_000, 1_000_000 + 1_800_000, {1: goodput.Step(600.0)}),
        goodput.AttemptTrace("r1-a2", 3_000_000, None),
    ]
    report.goodput = goodput.account(traces, [], report.now_ms, 8).as_json()
    text = run_report.render(report)
    assert "<th>hours</th><th>start-up</th><th>GPUs</th>" in text
    # a1: its start to its first step (1800 s less its 600-s step); a2: no step yet.
    cells = re.findall(r"<td>(r1-a\d)</td>(?:<td>[^<]*</td>){4}<td>([^<]*)</td>", text)
    assert cells == [("r1-a1", "20.0 min"), ("r1-a2", "no step seen")]
