"""The eval job as the cluster runs it: a real `python3 -m jobs.head.eval_job` process on a folder
standing in for Lustre, the framework's evaluation replaced by the stub generator (its command
line and output format), the result file read back through its pydantic schema."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from jobs.head import pass_k
from jobs.recipes import evals
from jobs.recipes.catalogue import RECIPES
from jobs.runs import eval_results
from jobs.runs.plan import JOBS_REPO
from tests.jobs import eval_fixture as fx

pytestmark = pytest.mark.subprocess_cli  # every test starts the eval job as its own process


def run_env(lustre: fx.Lustre) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(JOBS_REPO),
        "EVAL_STUB_ANSWERS": str(lustre.answers),
    }


def run_job(lustre: fx.Lustre, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=run_env(lustre), capture_output=True, text=True, timeout=120)


def expected(model: str, k: int) -> float:
    return pass_k.mean_pass_at_k(fx.RIGHT[model], 4, k)


@pytest.mark.parametrize("recipe", ["nemo-rl-grpo-gsm8k", "verl-grpo-gsm8k"])
def test_a_step_is_scored_into_eval_step_n_json_and_a_rerun_writes_the_same_bytes(tmp_path, recipe):
    lustre = fx.make(tmp_path, "r1")
    rec = fx.recorded(lustre, "r1", recipe)
    req = evals.request("pass@k", k=2, n=4, seed=3)
    done = run_job(lustre, fx.job_argv(lustre, rec, req, 20))
    assert done.returncode == 0, done.stderr
    path = lustre.runs / "r1" / "eval" / "step_20.json"
    first = path.read_bytes()
    results, bad = eval_results.read(lustre.runs, "r1")
    assert bad == {}
    (got,) = results
    assert (got.step, got.dataset, got.metric, got.k, got.n, got.seed) == (
        20,
        "GSM8K",
        "pass@k",
        2,
        4,
        3,
    )
    assert got.count == 5 and [p.correct for p in got.problems] == fx.RIGHT["step_20"]
    assert got.score == pytest.approx(expected("step_20", 2), abs=1e-12)
    assert got.data_revision.startswith("sha256:")
    assert got.model_revision == f"r1 step 20 (from {RECIPES[recipe].model}@c0ffee)"
    # Run again from scratch (a job cut by a lost node and resubmitted): the same bytes.
    path.unlink()
    again = run_job(lustre, fx.job_argv(lustre, rec, req, 20))
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == first
    # And once written, the same settings are kept, not redone.
    kept = run_job(lustre, fx.job_argv(lustre, rec, req, 20))
    assert "already evaluated with these settings; kept" in kept.stdout
    assert path.read_bytes() == first


def test_the_base_model_and_two_steps_give_the_status_line_and_the_best_step(tmp_path):
    lustre = fx.make(tmp_path, "r2")
    rec = fx.recorded(lustre, "r2", "verl-grpo-gsm8k")
    req = evals.request("pass@k", k=1, n=4)
    for step in (20, 40, None):
        done = run_job(lustre, fx.job_argv(lustre, rec, req, step))
        assert done.returncode == 0, done.stderr
    results, _ = eval_results.read(lustre.runs, "r2")
    assert [r.step for r in results] == [20, 40, None]
    line = eval_results.summary(results)
    assert line == (
        f"GSM8K {100 * expected('step_40', 1):.1f}% at step 40 "
        f"(base {100 * expected('base', 1):.1f}%)"
    )
    assert eval_results.best(results).step == 40
    assert results[-1].model_revision == "Qwen/Qwen2.5-3B-Instruct@c0ffee"


def test_a_step_that_is_not_complete_is_refused_and_nothing_is_written(tmp_path):
    lustre = fx.make(tmp_path, "r3")
    rec = fx.recorded(lustre, "r3", "nemo-rl-grpo-gsm8k")
    done = run_job(lustre, fx.job_argv(lustre, rec, evals.request("pass@k", 1, 1), 30))
    assert done.returncode == 1
    assert "no complete checkpoint for step 30" in done.stderr
    assert not (lustre.runs / "r3" / "eval").exists()


def test_a_framework_that_writes_no_samples_fails_naming_where_it_looked(tmp_path):
    lustre = fx.make(tmp_path, "r4")
    rec = fx.recorded(lustre, "r4", "verl-grpo-gsm8k")
    argv = fx.job_argv(lustre, rec, evals.request("pass@k", 1, 1), 20)
    cut = argv.index("--")
    done = run_job(lustre, [*argv[: cut + 1], "true"])
    assert done.returncode == 1
    assert "expected one validation dump in" in done.stderr
    assert not (lustre.runs / "r4" / "eval" / "step_20.json").exists()


def test_the_base_model_is_evaluated_once_per_model_and_data_revision(tmp_path):
    lustre = fx.make(tmp_path, "one")
    req = evals.request("pass@k", k=1, n=4)
    first = run_job(
        lustre, fx.job_argv(lustre, fx.recorded(lustre, "one", "verl-grpo-gsm8k"), req, None)
    )
    assert first.returncode == 0, first.stderr
    # A second run of the same recipe, model commit and held-out file: the cached result, even
    # with a framework that would fail (it is not run).
    (lustre.runs / "two").mkdir()
    (lustre.runs / "two" / "staged-model.json").write_text('{"commit": "c0ffee"}')
    argv = fx.job_argv(lustre, fx.recorded(lustre, "two", "verl-grpo-gsm8k"), req, None)
    second = run_job(lustre, [*argv[: argv.index("--") + 1], "false"])
    assert second.returncode == 0, second.stderr
    assert "cached" in second.stdout and "reused" in second.stdout
    one = json.loads((lustre.runs / "one" / "eval" / "base.json").read_text())
    two = json.loads((lustre.runs / "two" / "eval" / "base.json").read_text())
    assert {**one, "run": "two"} == two
    # Another model commit is another model: evaluated, not taken from the cache.
    (lustre.runs / "three").mkdir()
    (lustre.runs / "three" / "staged-model.json").write_text('{"commit": "d00d"}')
    argv = fx.job_argv(lustre, fx.recorded(lustre, "three", "verl-grpo-gsm8k"), req, None)
    third = run_job(lustre, [*argv[: argv.index("--") + 1], "false"])
    assert third.returncode == 1 and "the evaluation exited 1" in third.stderr


def sharded(argv: list[str], size: int) -> list[str]:
    """The job's argv with `--shard-size` before the framework's command."""
    cut = argv.index("--")
    return [*argv[:cut], "--shard-size", str(size), *argv[cut:]]


def test_a_job_cut_mid_shard_keeps_finished_shards_and_writes_the_same_bytes(tmp_path):
    # 5 problems in shards of 2: 3 shards. An uninterrupted job on one stand-in, and on another a
    # job whose framework dies on shard 2 (as under a lost node), then the same job again.
    req = evals.request("pass@k", k=2, n=4, seed=3)
    whole = fx.make(tmp_path / "whole", "r6")
    rec = fx.recorded(whole, "r6", "nemo-rl-grpo-gsm8k")
    done = run_job(whole, sharded(fx.job_argv(whole, rec, req, 20), 2))
    assert done.returncode == 0, done.stderr
    assert [f"shard {i} of 3" in done.stdout for i in (1, 2, 3)] == [True] * 3
    first = (whole.runs / "r6" / "eval" / "step_20.json").read_bytes()

    cut = fx.make(tmp_path / "cut", "r6")
    rec = fx.recorded(cut, "r6", "nemo-rl-grpo-gsm8k")
    argv = sharded(fx.job_argv(cut, rec, req, 20), 2)
    env = {"EVAL_STUB_FAIL_ON": "data-2."}
    failed = subprocess.run(
        argv, env={**run_env(cut), **env}, capture_output=True, text=True, timeout=120
    )
    assert failed.returncode == 3, failed.stderr
    result = cut.runs / "r6" / "eval" / "step_20.json"
    assert not result.exists()
    (parts,) = (cut.runs / "r6" / "eval" / "parts").iterdir()
    assert sorted(p.name for p in parts.glob("shard-*.json")) == ["shard-1.json"]

    again = run_job(cut, argv)
    assert again.returncode == 0, again.stderr
    assert "shard 1 of 3 already evaluated; kept" in again.stdout
    assert "eval: shard 1 of 3\n" not in again.stdout  # not run again
    assert result.read_bytes() == first
    assert list((cut.runs / "r6" / "eval" / "parts").iterdir()) == []  # gone with the result
    assert fx.RIGHT["step_20"] == [p["correct"] for p in json.loads(first)["problems"]]


def test_a_parquet_held_out_file_is_cut_into_whole_rows_in_order(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.head import eval_shards

    data = tmp_path / "test.parquet"
    pq.write_table(pa.table({"prompt": [f"p{i}" for i in range(5)], "i": list(range(5))}), data)
    shards = eval_shards.plan(tmp_path / "parts", tmp_path / "raw", data, 2)
    assert [s.index for s in shards] == [1, 2, 3]
    pieces = [pq.read_table(s.data).to_pylist() for s in shards if s.data is not None]
    assert [r["i"] for piece in pieces for r in piece] == list(range(5))
    assert [len(p) for p in pieces] == [2, 2, 1]
    command = ["main", f"data.val_files={data}", f"trainer.validation_data_dir={tmp_path / 'raw'}"]
    assert eval_shards.command_for(command, shards[1], data, tmp_path / "raw") == [
        "main",
        f"data.val_files={shards[1].data}",
        f"trainer.validation_data_dir={tmp_path / 'raw' / 'shard-2'}",
    ]
    # A command that names no held-out file cannot be sharded: the job evaluates it whole.
    assert eval_shards.command_for(["main"], shards[1], data, tmp_path / "raw") is None
