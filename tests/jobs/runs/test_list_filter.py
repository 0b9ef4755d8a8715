"""`list --status --since --limit` (jobs/runs/list_filter.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobs.common.errors import UsageError
from jobs.runs import list_filter
from jobs.runs.state import STATUSES

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC).timestamp()
ROWS = [
    {"run": "c", "status": "RUNNING", "started": int((NOW - 600) * 1000)},
    {"run": "b", "status": "FAILED", "started": int((NOW - 3 * 3600) * 1000)},
    {"run": "a", "status": "FAILED", "started": int((NOW - 3 * 86400) * 1000)},
]


@pytest.mark.parametrize(
    "text, seconds_ago",
    [("30m", 1800), ("2h", 7200), ("1.5d", 129600), ("10s", 10), ("1w", 604800)],
)
def test_since_takes_a_time_ago(text, seconds_ago):
    assert list_filter.since_ms(text, NOW) == int((NOW - seconds_ago) * 1000)


def test_since_takes_a_date_in_utc_unless_it_says_otherwise():
    assert list_filter.since_ms("2026-12-01", NOW) == int(
        datetime(2026, 12, 1, tzinfo=UTC).timestamp() * 1000
    )
    assert list_filter.since_ms("2026-12-01T08:00+01:00", NOW) == int(
        datetime(2026, 12, 1, 7, tzinfo=UTC).timestamp() * 1000
    )


@pytest.mark.parametrize("text", ["yesterday", "2x", "-2h", ""])
def test_a_since_that_is_no_time_is_refused_naming_it(text):
    with pytest.raises(UsageError, match=f"--since {text!r} is neither"):
        list_filter.since_ms(text, NOW)


def test_a_status_is_matched_whatever_its_case_and_an_unknown_one_refused():
    assert list_filter.status_of("failed", STATUSES) == "FAILED"
    with pytest.raises(UsageError, match="--status 'done' is not a run status") as e:
        list_filter.status_of("done", STATUSES)
    assert "SUCCEEDED" in e.value.hint


def test_filters_combine_and_keep_the_newest_first():
    day = list_filter.since_ms("1d", NOW)
    assert [r["run"] for r in list_filter.apply(ROWS, "FAILED")] == ["b", "a"]
    assert [r["run"] for r in list_filter.apply(ROWS, since=day)] == ["c", "b"]
    assert [r["run"] for r in list_filter.apply(ROWS, "FAILED", day)] == ["b"]
    assert [r["run"] for r in list_filter.apply(ROWS, limit=2)] == ["c", "b"]
    assert list_filter.apply(ROWS) == ROWS
