"""`submit --eval-at-end` before anything is contacted: a dry run shows the eval the run's
supervisor would queue, and the flag is refused by name where it cannot hold."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import protocol
from jobs.recipes import evals


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"RAY_ADDRESS": None, "COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def test_a_dry_run_prints_the_eval_queued_at_the_end():
    code, out, err = cli("submit", "verl-grpo-gsm8k", "--name", "g1", "--dry-run", "--eval-at-end")
    assert code == 0, err
    run, _, at_end = out.partition("when the run succeeds, its supervisor queues")
    assert run.startswith("would submit g1-a1")
    assert "would submit g1-eval-N" in at_end
    assert f"--step {protocol.EVAL_STEP} " in at_end and "kind=eval" in at_end


def test_a_json_dry_run_carries_the_eval_beside_the_attempt():
    code, out, err = cli(
        "submit", "nemo-rl-grpo-gsm8k", "--name", "n1", "--dry-run", "--eval-at-end", "--json"
    )
    assert code == 0, err
    shown = json.loads(out)
    assert shown["submission_id"] == "n1-a1"
    assert shown["eval_at_end"]["submission_id"] == "n1-eval-N"
    assert shown["eval_at_end"]["metadata"]["step"] == protocol.EVAL_STEP
    assert "--hf-dir" in shown["eval_at_end"]["entrypoint"]  # NeMo RL converts the step first


def test_without_the_flag_a_dry_run_shows_no_eval():
    code, out, _ = cli("submit", "verl-grpo-gsm8k", "--name", "g1", "--dry-run", "--json")
    assert code == 0 and "eval_at_end" not in json.loads(out)


def test_a_recipe_without_a_held_out_split_is_refused_before_anything_is_planned(monkeypatch):
    monkeypatch.delitem(evals.HELD_OUT, "verl-grpo-gsm8k")
    code, out, err = cli(
        "submit", "verl-grpo-gsm8k", "--eval-at-end", "--address", "http://127.0.0.1:9"
    )
    assert code == 2 and out == ""
    assert err.startswith("error: --eval-at-end: recipe verl-grpo-gsm8k has no held-out split")


def test_resume_with_the_flag_is_refused_before_any_cluster_is_contacted():
    code, _, err = cli(
        "submit", "--resume", "g1", "--eval-at-end", "--address", "http://127.0.0.1:9"
    )
    assert code == 2
    assert err.startswith("error: --resume g1 cannot be combined with --eval-at-end")
