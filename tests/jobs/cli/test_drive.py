"""`takes_submitting`: the flags every submitting command shares stand where the command asks for
them, and reach it checked, as one `Submitting`."""

from __future__ import annotations

import inspect

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.cli.drive import Submitting, takes_submitting

SUPERVISION = [
    "follow_logs",
    "wait",
    "max_restarts",
    "max_preemptions",
    "stall_timeout",
    "capacity_deadline",
    "runs_root",
]


def test_the_shared_flags_stand_in_for_submitting_and_the_reach_flags_come_last():
    got: list[Submitting] = []

    def command(first: str, *, submitting: Submitting, last: int = 0) -> None:
        got.append(submitting)

    wrapped = takes_submitting(command)
    names = list(inspect.signature(wrapped).parameters)
    assert names == ["first", *SUPERVISION, "last", "as_json", "addr", "stack_name"]
    wrapped(
        "x",
        **{n: p.default for n, p in inspect.signature(wrapped).parameters.items() if n != "first"},
    )
    [submitting] = got
    assert (submitting.follow_logs, submitting.max_restarts, submitting.as_json) == (
        False,
        0,
        False,
    )
    assert submitting.supervision.runs_root == ""


@pytest.mark.parametrize(
    "args",
    [["run", "--no-wait", "--follow", "--", "true"], ["submit", "x", "--no-wait", "--follow"]],
)
def test_the_shared_flags_are_checked_before_the_command_runs(args):
    result = CliRunner().invoke(app, args, env={"RAY_ADDRESS": None})
    assert result.exit_code == 2, result.output
    assert "--no-wait cannot be combined with --follow" in result.stderr
