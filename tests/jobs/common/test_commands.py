"""Hints name the program the way it was started: `rl-jobs`, or `python -m jobs` for the alias."""

from __future__ import annotations

import pytest

from jobs.common import commands


@pytest.fixture(autouse=True)
def _restore_spelling():
    yield
    commands.spelled_as("rl-jobs")


def test_the_installed_command_is_the_default_spelling():
    commands.spelled_as("/home/me/rl-on-gke/.venv/bin/rl-jobs")
    assert commands.command("stop", "r1", where=" --stack dev") == "rl-jobs stop r1 --stack dev"


def test_python_m_jobs_is_answered_in_its_own_words():
    commands.spelled_as("/home/me/rl-on-gke/jobs/__main__.py")
    assert commands.command("logs", "r1", "--follow") == "python -m jobs logs r1 --follow"
    assert commands.started_with("command") == "`python -m jobs run`"


def test_an_unknown_kind_is_named_as_unknown():
    assert commands.started_with("nonsense") == "an unknown tool"
