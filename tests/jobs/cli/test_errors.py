"""Errors nobody anticipated: one line, exit 4, never read as "the job failed"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from jobs.cli import app as cli
from jobs.common.errors import ExitCode

runner = CliRunner()


def test_an_unexpected_error_is_one_line_with_exit_4(monkeypatch):
    def broken(_recipe: object) -> dict:
        raise ValueError("first line\nsecond line\n  third")

    monkeypatch.setattr(cli, "_recipe_view", broken)
    monkeypatch.delenv("JOBS_DEBUG", raising=False)
    result = runner.invoke(cli.app, ["recipes"])
    assert result.exit_code == ExitCode.INTERNAL == 4
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "error: unexpected ValueError: first line second line third "
        "(hint: this is a bug in rl-jobs, not in your job"
    )
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_jobs_debug_shows_the_traceback_and_keeps_exit_4(monkeypatch):
    """JOBS_DEBUG=1 turned exit 4 into 1, which a script reads as "the job failed"."""

    def broken(_recipe: object) -> dict:
        raise ValueError("boom")

    monkeypatch.setattr(cli, "_recipe_view", broken)
    monkeypatch.setenv("JOBS_DEBUG", "1")
    result = runner.invoke(cli.app, ["recipes"])
    assert result.exit_code == ExitCode.INTERNAL == 4
    assert "Traceback" in result.stderr and "ValueError: boom" in result.stderr


@pytest.mark.subprocess_cli
def test_run_with_a_token_in_the_command_exits_2_before_contacting_anything():
    from jobs.client.net import free_port
    from tests.jobs.conftest import run_cli

    token = "hf_" + "K" * 34
    # Nothing listens at the address: reaching the cluster would be exit 3, so exit 2 proves
    # the command was refused before any connection, upload or job record.
    done = run_cli(
        "run",
        "--address",
        f"http://127.0.0.1:{free_port()}",
        "--",
        "env",
        f"HF_TOKEN={token}",
        "python",
        "x.py",
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "error: the command holds a token-shaped value, refused (the "
        "value is not shown) (hint: tokens come from the cluster's "
        "Kubernetes Secret"
    )
    assert token not in done.stderr + done.stdout and done.stderr.count("\n") == 1


def test_resume_keeps_the_runs_name_and_node_size():
    """--set and --nodes are checked against the run's checkpoints (jobs/runs/resume_changes.py);
    a new name or node size is another run, refused before anything is contacted."""
    result = runner.invoke(
        cli.app,
        [
            "submit",
            "--resume",
            "r1",
            "--name",
            "r2",
            "--gpus-per-node",
            "4",
            "--address",
            "http://127.0.0.1:1",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --resume r1 cannot be combined with --name, --gpus-per")


def test_submit_needs_a_recipe_or_resume():
    result = runner.invoke(cli.app, ["submit", "--address", "http://127.0.0.1:1"])
    assert result.exit_code == 2 and "no recipe given" in result.stderr
