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


@pytest.mark.parametrize(
    "args, named",
    [
        (["--every", "0"], "--every 0: the step interval must be a whole number of at least 1"),
        (["--every", "-2"], "--every -2: the step interval must be a whole number of at least 1"),
        (["--every", "100", "--step", "200"], "--every 100 with --step"),
        (["--every", "100", "--base"], "--every 100 with --base"),
    ],
)
def test_every_refuses_a_bad_interval_or_a_conflict_before_any_cluster_is_contacted(args, named):
    code, out, err = cli("eval", "r", *args, "--address", "http://127.0.0.1:9")
    assert code == 2
    assert err.startswith(f"error: {named}")
    assert out == ""


def test_every_with_nothing_to_evaluate_submits_nothing(monkeypatch):
    from contextlib import contextmanager

    from jobs.client.types import JobStatus
    from jobs.runs import address
    from tests.jobs.runs import test_eval_every as every

    cluster = every.Cluster([every._eval_job("r-eval-1-a1", "100", JobStatus.SUCCEEDED)])
    monkeypatch.setattr(every.evaluate, "recorded_run", lambda *_a: every._run_of("r", 2))
    monkeypatch.setattr(
        every.run_checkpoints,
        "inventory",
        lambda *_a: {"checkpoints": [{"step": 100, "complete": True}]},
    )
    monkeypatch.setattr(address, "reach", contextmanager(lambda *_a, **_k: (yield cluster)))
    code, out, err = cli("eval", "r", "--every", "100", "--address", "http://127.0.0.1:9")
    assert code == 2
    assert "nothing to evaluate for run r: complete steps: 100" in err
    assert cluster.submitted == [] and out == ""
