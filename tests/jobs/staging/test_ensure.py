"""An attempt's first step: a staged model is used offline; an unstaged one is staged once, here."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.staging import record
from tests.fakehub import FakeHub, Repo
from tests.jobs.staging.conftest import run_module

# The staging modules run as processes against the stand-in Hub (tests/fakehub.py).
pytestmark = pytest.mark.hub

ENSURE = "jobs.staging.ensure"


def test_a_staged_model_is_used_without_contacting_the_hub(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    assert run_module("jobs.staging.stage", ["--model", "org/tiny"], home, hub.url).returncode == 0
    hub.requests.clear()
    tiny.push({"config.json": b"{}"})  # main moved on: the staged commit still runs
    done = run_module(ENSURE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert "loads it offline" in done.stdout and hub.requests == []


def test_an_unstaged_model_is_staged_by_the_attempt_itself_once(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    done = run_module(ENSURE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert "staging it now" in done.stdout
    staged = record.load(home, "org/tiny")
    assert staged is not None and staged.commit == tiny.branches["main"]
    gets = len(hub.file_gets())
    assert run_module(ENSURE, ["--model", "org/tiny"], home, hub.url).returncode == 0
    assert len(hub.file_gets()) == gets


def test_an_unstaged_model_with_no_hub_fails_the_attempt_with_the_reason(
    tmp_path: Path, hub: FakeHub
) -> None:
    home = tmp_path / "hf"
    done = run_module(ENSURE, ["--model", "org/absent"], home, hub.url)
    assert done.returncode == 1
    assert "'org/absent' is not on the Hub" in done.stderr
    assert "HF_HUB_OFFLINE=1" in done.stderr


def test_a_local_directory_needs_no_staging(tmp_path: Path, hub: FakeHub) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    done = run_module(ENSURE, ["--model", str(weights)], tmp_path / "hf", hub.url)
    assert done.returncode == 0 and "nothing to stage" in done.stdout
    assert hub.requests == []


def test_a_recipes_hub_dataset_is_staged_once_and_loads_offline(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    """The attempt's first step loads the dataset online once; the framework's own
    `load_dataset(name, config)` then works with HF_HUB_OFFLINE=1 and the Hub gone."""
    import io
    import os
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = io.BytesIO()
    pq.write_table(pa.table({"question": ["1+1?", "2+2?"], "answer": ["2", "4"]}), table)
    data = Repo()
    hub.repos["org/qa"] = data
    data.push(
        {
            "README.md": b"---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train"
            b"\n    path: main/train-*\n---\n",
            "main/train-00000-of-00001.parquet": table.getvalue(),
        }
    )
    home = tmp_path / "hf"
    done = run_module(ENSURE, ["--model", "org/tiny", "--dataset", "org/qa:main"], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert "dataset org/qa:main staged: train 2 rows" in done.stdout
    hub.requests.clear()
    again = run_module(ENSURE, ["--model", "org/tiny", "--dataset", "org/qa:main"], home, hub.url)
    assert again.returncode == 0 and hub.requests == []
    hub.__exit__()
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from datasets import load_dataset; "
            "print(load_dataset('org/qa', 'main')['train'][1]['answer'])",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip().endswith("4")


def test_a_restage_during_a_run_is_refused_not_loaded_and_the_old_commit_continues_it(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    """A restage during a run silently moved the model's pinned commit, so
    the next attempt loaded other weights under the run's checkpoints. The first attempt pins
    the commit it loaded (in the run's directory); a later one refuses another."""
    home, pin = tmp_path / "hf", tmp_path / "runs" / "r" / "staged-model.json"
    stage = "jobs.staging.stage"
    assert run_module(stage, ["--model", "org/tiny"], home, hub.url).returncode == 0
    first = tiny.branches["main"]
    done = run_module(ENSURE, ["--model", "org/tiny", "--pin", str(pin)], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert f"run pinned to org/tiny at commit {first}" in done.stdout
    tiny.push({"config.json": b'{"model_type": "qwen3"}'})
    newer = tiny.branches["main"]
    restaged = run_module(stage, ["--model", "org/tiny", "--revision", newer], home, hub.url)
    assert restaged.returncode == 0, restaged.stderr
    assert record.load(home, "org/tiny").commit == tiny.branches["main"] != first
    refused = run_module(ENSURE, ["--model", "org/tiny", "--pin", str(pin)], home, hub.url)
    assert refused.returncode == 1
    assert f"restaged to commit {tiny.branches['main']} after this run started on {first}" in (
        refused.stderr
    )
    assert f"rl-jobs stage org/tiny --revision {first}" in refused.stderr
    back = run_module(stage, ["--model", "org/tiny", "--revision", first], home, hub.url)
    assert back.returncode == 0, back.stderr
    again = run_module(ENSURE, ["--model", "org/tiny", "--pin", str(pin)], home, hub.url)
    assert again.returncode == 0, again.stderr
