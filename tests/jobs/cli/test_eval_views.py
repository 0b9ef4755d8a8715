"""Held-out scores kept with the run, as `status`, `list` and `report` show them: files written by
the eval job's own writer (jobs.head.eval_result) on a runs root, log lines of eval jobs for a
cluster's view."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import eval_result
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import eval_results, run_report

NARROW = {"COLUMNS": "80", "RAY_ADDRESS": None, "JOBS_DEBUG": None}


def _record(root, run: str) -> None:
    store = RunStore(root, run)
    store.acquire(f"{run}-s1", ttl_s=3600)
    store.write_spec({"run": run})
    store.append(ev.record(ev.SUBMITTED, run, "submitted", attempt=1, submission_id=f"{run}-a1"))


def _result(run: str, step: int | None, right: int, of: int = 1000) -> dict:
    settings = eval_result.Settings(
        run=run,
        step=step,
        dataset="GSM8K",
        metric="pass@k",
        k=1,
        n=1,
        seed=42,
        data_revision="sha256:d",
        model_revision="m@c",
    )
    samples = [eval_result.Sample(f"q{i}", 1.0 if i < right else 0.0) for i in range(of)]
    return eval_result.result(settings, samples)


def _evaluated(root, run: str) -> None:
    for step, right in ((100, 655), (300, 712), (200, 730), (None, 498)):
        eval_result.write(root / run / "eval", _result(run, step, right))


def test_status_of_a_runs_root_says_the_newest_step_beside_the_base_model(tmp_path):
    _record(tmp_path, "r")
    _evaluated(tmp_path, "r")
    got = CliRunner().invoke(app, ["status", "r", "--runs-root", str(tmp_path)], env=NARROW)
    assert got.exit_code == 0, got.output
    assert "            eval: GSM8K 71.2% at step 300 (base 49.8%)" in got.stdout.splitlines()
    as_json = CliRunner().invoke(
        app, ["status", "r", "--runs-root", str(tmp_path), "--json"], env=NARROW
    )
    view = json.loads(as_json.stdout)["eval"]
    assert view["summary"] == "GSM8K 71.2% at step 300 (base 49.8%)"
    assert view["best_step"] == 200  # the highest score, not the newest step
    assert [r["step"] for r in view["results"]] == [100, 200, 300, None]
    assert "problems" not in view["results"][0]


def test_a_run_without_evaluations_shows_no_eval_line(tmp_path):
    _record(tmp_path, "r")
    got = CliRunner().invoke(app, ["status", "r", "--runs-root", str(tmp_path)], env=NARROW)
    assert got.exit_code == 0 and "eval:" not in got.stdout and "eval at end" not in got.stdout


def test_status_says_the_eval_the_supervisor_queued_when_the_run_succeeded(tmp_path):
    _record(tmp_path, "r")
    store = RunStore(tmp_path, "r")
    store.append(ev.record(ev.FINISHED, "r", "run r succeeded (r-a1)", reason="succeeded"))
    said = "evaluation of step 300 queued as r-eval-1 (its score shows in `status r` once it ends)"
    store.append(ev.record(ev.EVAL_QUEUED, "r", said, submission_id="r-eval-1", step=300))
    got = CliRunner().invoke(app, ["status", "r", "--runs-root", str(tmp_path)], env=NARROW)
    assert got.exit_code == 0, got.output
    assert f"     eval at end: {said}" in got.stdout.splitlines()
    as_json = CliRunner().invoke(
        app, ["status", "r", "--runs-root", str(tmp_path), "--json"], env=NARROW
    )
    at_end = json.loads(as_json.stdout)["eval"]["at_end"]
    assert (at_end["event"], at_end["submission_id"], at_end["step"]) == (
        ev.EVAL_QUEUED,
        "r-eval-1",
        300,
    )


def test_list_of_a_runs_root_has_an_eval_column(tmp_path):
    _record(tmp_path, "r")
    _evaluated(tmp_path, "r")
    got = CliRunner().invoke(app, ["list", "--runs-root", str(tmp_path)], env=NARROW)
    assert got.exit_code == 0, got.output
    assert "  eval GSM8K 71.2% at step 300 (base 49.8%)" in got.stdout.splitlines()


def test_the_report_has_a_table_and_a_plot_over_steps():
    report = run_report.RunReport(run="r", now_ms=1)
    report.evals = [
        eval_results.EvalResult.model_validate(_result("r", step, right))
        for step, right in ((100, 655), (300, 712), (None, 498))
    ]
    page = run_report.render(report)
    assert "Held-out evaluation: GSM8K 71.2% at step 300 (base 49.8%)" in page
    assert "<td>base</td><td>GSM8K</td><td>pass@1 (n=1, seed 42)</td><td>49.8%</td>" in page
    assert page.count('class="pt"') >= 2  # one point per evaluated step
    single = run_report.RunReport(run="r", now_ms=1, evals=report.evals[1:])
    assert "Held-out evaluation" in run_report.render(single)
