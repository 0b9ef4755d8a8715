"""Errors nobody anticipated: one line, exit 4, never read as "the job failed"."""

from __future__ import annotations

from typer.testing import CliRunner

from jobs import cli
from jobs.errors import ExitCode

runner = CliRunner()


def test_an_unexpected_error_is_one_line_with_exit_4(monkeypatch):
    def broken(_recipe: object) -> dict:
        raise ValueError("first line\nsecond line\n  third")

    monkeypatch.setattr(cli, "_recipe_view", broken)
    monkeypatch.delenv("JOBS_DEBUG", raising=False)
    result = runner.invoke(cli.app, ["recipes"])
    assert result.exit_code == ExitCode.INTERNAL == 4
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: unexpected ValueError: first line second line third "
                                    "(hint: this is a bug in python -m jobs, not in your job")
    assert "Traceback" not in result.stderr and result.stdout == ""
