"""The report's first screen: the run's state and outcome, each attempt's end in a line with its log folded."""

from __future__ import annotations

from jobs.head import events as ev
from jobs.runs import report_story
from tests.jobs.html_page import Page

RAY_FAILED = (
    "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 "
    'chars):\n  File "train.py", line 3\nValueError: batch size 7 does not divide 64\n'
)


def test_an_attempts_end_says_its_cause_then_the_error_it_ended_on():
    decisions = [
        {"event": ev.PREEMPTED, "submission_id": "r-a1", "message": "node n1 died"},
        {"event": ev.STALLED, "submission_id": "r-a2", "message": "silent"},
    ]
    assert report_story.cause_of(decisions, "r-a1") == "preempted"
    assert report_story.cause_of(decisions, "r-a3") == ""
    why = report_story.why_it_ended(RAY_FAILED, "FAILED", "preempted")
    assert why.startswith("preempted; ") and "batch size 7 does not divide 64" in why
    assert "\n" not in why
    assert report_story.why_it_ended("Job is currently running.", "RUNNING", "") == ""
    # A log that ends on a step line (Ray's colour codes and actor prefix) names no error:
    # Ray's own words say how it ended.
    stepped = RAY_FAILED.split("\n")[0] + "\n\x1b[36m(TaskRunner pid=7)\x1b[0m step:4 - x:1\n"
    assert report_story.why_it_ended(stepped, "FAILED", "") == (
        "Job entrypoint command failed with exit code 1"
    )


def test_each_end_is_one_line_with_its_log_folded_or_said_lost():
    ends = [
        report_story.AttemptEnd("r-a1", "FAILED", 720.0, 40, "preempted", None, "lost with node"),
        report_story.AttemptEnd("r-a2", "SUCCEEDED", 65.0, 52, "", "step:52\ndone\n"),
    ]
    text = report_story.ends_html(ends)
    page = Page(text)
    assert page.errors == []
    items = [li["data-attempt"] for li in page.all("li")]
    assert items == ["r-a1", "r-a2"]
    assert "r-a1 FAILED after 12 min, step 40: preempted" in text
    assert "lost with node" in text and text.count("<details>") == 1
    assert "r-a2 SUCCEEDED after 1 min, step 52" in text


def test_the_summary_names_the_state_first_and_escapes_what_the_run_said():
    text = report_story.summary_html(
        "r<1>", "FAILED", "gave up: <crash>", {"step": 3, "of": None}, None, []
    )
    assert text.index("FAILED") < text.index("gave up")
    assert "<crash>" not in text and "&lt;crash&gt;" in text
    assert Page(text).errors == []
