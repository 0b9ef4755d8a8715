"""Hints name the program the way it was started: `rl-jobs`, or `python -m jobs` for the alias."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.common import commands


@pytest.fixture(autouse=True)
def _restore_spelling():
    yield
    commands.spelled_as("rl-jobs", path="")


def _program(directory: Path, name: str) -> Path:
    program = directory / name
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return program


def test_the_installed_command_on_path_is_spelled_by_its_name(tmp_path):
    script = _program(tmp_path / "venv bin", "rl-jobs")
    commands.spelled_as(str(script), path=str(script.parent))
    assert commands.command("stop", "r1", where=" --stack dev") == "rl-jobs stop r1 --stack dev"
    commands.spelled_as("rl-jobs", path="")  # typed as a bare name: the shell found it
    assert commands.program() == "rl-jobs"


def test_a_command_started_by_its_path_off_path_is_spelled_by_that_path(tmp_path):
    """A hint of `rl-jobs ...` answered "command not found" when pasted into the shell that had
    started the program by its full path; another `rl-jobs` first on PATH is not this one."""
    script = _program(tmp_path / "venv bin", "rl-jobs")
    other = _program(tmp_path / "elsewhere", "rl-jobs")
    for path in ("", str(other.parent)):
        commands.spelled_as(str(script), path=path)
        assert commands.command("logs", "r1") == f"'{script}' logs r1"


def test_python_m_jobs_is_answered_in_its_own_words(tmp_path):
    python = _program(tmp_path / "venv", "python")
    commands.spelled_as(
        "/home/me/rl-on-gke/jobs/__main__.py", path=str(python.parent), python=str(python)
    )
    assert commands.command("logs", "r1", "--follow") == "python -m jobs logs r1 --follow"
    assert commands.started_with("command") == "`python -m jobs run`"


def test_python_m_jobs_under_a_python_off_path_names_that_python(tmp_path):
    """`python` on PATH is another interpreter (without this package): the hint names the one
    that ran, so it works outside the checkout too."""
    python = _program(tmp_path / "venv", "python")
    system = _program(tmp_path / "usr", "python")
    commands.spelled_as("/x/jobs/__main__.py", path=str(system.parent), python=str(python))
    assert commands.command("list") == f"{python} -m jobs list"


def test_an_unknown_kind_is_named_as_unknown():
    assert commands.started_with("nonsense") == "an unknown tool"
