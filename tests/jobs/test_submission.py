"""Submission ids, attempts and metadata."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from jobs import submission
from jobs.errors import UsageError


def test_attempt_ids_round_trip():
    assert submission.attempt_id("grpo-math-20261130-0452", 2) == "grpo-math-20261130-0452-a2"
    assert submission.split_attempt_id("grpo-math-20261130-0452-a12") == ("grpo-math-20261130-0452", 12)
    assert submission.split_attempt_id("raysubmit_abc") is None


def test_default_run_name_is_readable_utc_time():
    when = datetime(2026, 11, 30, 4, 52, 7, tzinfo=timezone.utc)
    assert submission.default_run_name("grpo-math", when) == "grpo-math-20261130-045207"


@pytest.mark.parametrize("name", ["Has Space", "../up", "", "x" * 64, "-lead"])
def test_bad_run_names_are_refused(name):
    with pytest.raises(UsageError):
        submission.check_run_name(name)


def test_next_attempt_keeps_the_command_and_changes_only_id_and_attempt():
    first = submission.for_command(["python", "-c", "print(1)"], "r1", None, "dev", "abc")
    second = first.for_attempt(2)
    assert second.submission_id == "r1-a2" and second.metadata["attempt"] == "2"
    assert second.entrypoint == first.entrypoint and second.runtime_env == first.runtime_env
    assert {k: v for k, v in second.metadata.items() if k != "attempt"} == \
        {k: v for k, v in first.metadata.items() if k != "attempt"}
    assert first.metadata["stack"] == "dev" and first.metadata["git_commit"] == "abc"


def test_git_commit_of_this_repo_is_a_sha():
    commit = submission.git_commit()
    assert len(commit.split("-")[0]) == 40
