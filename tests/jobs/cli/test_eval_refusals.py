"""`rl-jobs eval` refuses bad input by name before any cluster is contacted."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"RAY_ADDRESS": None, "COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args, named",
    [
        (["--metric", "cons@k"], "--metric 'cons@k' is not a metric the project scores"),
        (["--k", "5", "--n", "4"], "--k 5 with --n 4"),
        (["--step", "2", "--base"], "--step and --base together"),
    ],
)
def test_bad_input_is_refused_before_any_cluster_is_contacted(args, named):
    # Port 9 on loopback answers nothing: a command that tried to reach it would fail otherwise.
    code, _, err = cli("eval", "r", *args, "--address", "http://127.0.0.1:9")
    assert code == 2
    assert err.startswith(f"error: {named}")
