"""The one-time Megatron conversion: marked complete last, a partial one never reused.

NeMo RL's own import (Megatron-Bridge on GPUs) cannot run here; the stage job is given a
converter program of this test instead (`--converter`), a real process that writes a
checkpoint directory the way the import does (iter_0000000/ with files) and can die half-way.
What is under test is ours: where it writes, what is trusted, what is removed and when.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jobs.staging import layout, megatron, record
from tests.fakehub import FakeHub, Repo
from tests.jobs.staging.conftest import run_module

# The staging modules run as processes against the stand-in Hub (tests/fakehub.py).
pytestmark = pytest.mark.hub

CONVERTER = """
import argparse, os, sys
p = argparse.ArgumentParser()
for a in ("--model", "--out", "--tensor-parallel", "--dtype"):
    p.add_argument(a)
a = p.parse_args()
with open(os.environ["CONVERSIONS"], "a") as log:
    log.write(a.out + " tp=" + a.tensor_parallel + "\\n")
it = os.path.join(a.out, "iter_0000000")
os.makedirs(it, exist_ok=True)
open(os.path.join(it, "__0_0.distcp"), "w").write("half")
if os.environ.get("DIE_HALF_WAY"):
    sys.exit(9)
open(os.path.join(it, "run_config.yaml"), "w").write("model: {}")
"""


@pytest.fixture
def converter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    script = tmp_path / "convert.py"
    script.write_text(CONVERTER)
    log = tmp_path / "conversions.log"
    monkeypatch.setenv("CONVERSIONS", str(log))
    return f"{sys.executable} {script}", log


def _stage(home: Path, hub: FakeHub, command: str, *extra: str):
    return run_module(
        "jobs.staging.stage",
        ["--model", "org/tiny", "--convert", "--gpus", "8", "--converter", command, *extra],
        home,
        hub.url,
    )


def test_a_conversion_that_dies_half_way_leaves_nothing_nemo_rl_would_load(
    tmp_path: Path,
    hub: FakeHub,
    tiny: Repo,
    converter: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "hf"
    monkeypatch.setenv("DIE_HALF_WAY", "1")
    done = _stage(home, hub, converter[0])
    assert done.returncode == 1 and "conversion of org/tiny failed (exit 9)" in done.stderr
    target = layout.megatron_dir(home, "org/tiny")
    assert not target.exists()  # NeMo RL tests iter_0000000 there: it must not exist
    assert not any(p.name.startswith(".tiny.") for p in target.parent.iterdir())


def test_a_partial_conversion_is_redone_and_a_complete_one_reused(
    tmp_path: Path, hub: FakeHub, tiny: Repo, converter: tuple[str, Path]
) -> None:
    home = tmp_path / "hf"
    target = layout.megatron_dir(home, "org/tiny")
    (target / "iter_0000000").mkdir(parents=True)  # what a preempted in-run conversion leaves
    (target / "iter_0000000" / "__0_0.distcp").write_text("torn")
    done = _stage(home, hub, converter[0])
    assert done.returncode == 0, done.stderr
    assert "partial conversion" in done.stdout
    commit = tiny.branches["main"]
    marker = json.loads((target / layout.CONVERTED_MARKER).read_text())
    assert marker["commit"] == commit and marker["model"] == "org/tiny"
    assert (target / "iter_0000000" / "run_config.yaml").exists()
    assert "tp=8" in converter[1].read_text()
    runs = converter[1].read_text().count("\n")
    again = _stage(home, hub, converter[0])
    assert again.returncode == 0 and "already complete" in again.stdout
    assert converter[1].read_text().count("\n") == runs  # not converted again


def test_an_attempt_keeps_a_complete_in_run_import_and_removes_one_cut_short(
    tmp_path: Path, hub: FakeHub, tiny: Repo, converter: tuple[str, Path]
) -> None:
    """The guard deleted every unmarked conversion, so an unstaged Megatron
    run re-imported on every attempt. Megatron-Bridge writes run_config.yaml last (the stand-in
    converter does too): an unmarked import that has it is NeMo RL's completed in-run import."""
    home = tmp_path / "hf"
    assert _stage(home, hub, converter[0]).returncode == 0
    target = layout.megatron_dir(home, "org/tiny")
    kept = run_module("jobs.staging.ensure", ["--model", "org/tiny", "--megatron"], home, hub.url)
    assert kept.returncode == 0, kept.stderr
    assert "complete" in kept.stdout and (target / layout.CONVERTED_MARKER).exists()
    (target / layout.CONVERTED_MARKER).unlink()  # as NeMo RL's in-run import leaves it
    adopted = run_module(
        "jobs.staging.ensure", ["--model", "org/tiny", "--megatron"], home, hub.url
    )
    assert adopted.returncode == 0, adopted.stderr
    assert "NeMo RL's own import of org/tiny completed" in adopted.stdout, adopted.stdout
    marker = json.loads((target / layout.CONVERTED_MARKER).read_text())
    assert marker["commit"] == record.load(home, "org/tiny").commit
    assert marker["by"] == "nemo-rl in-run import"
    # Cut short: run_config.yaml not written (or written half: not the mapping NeMo RL reads).
    for cut in (None, "model: {a: 1\n  b"):
        (target / layout.CONVERTED_MARKER).unlink()
        run_config = target / layout.MEGATRON_ITERATION / megatron.RUN_CONFIG
        if cut is None:
            run_config.unlink()
        else:
            run_config.write_text(cut)
        removed = run_module(
            "jobs.staging.ensure", ["--model", "org/tiny", "--megatron"], home, hub.url
        )
        assert removed.returncode == 0, removed.stderr
        assert "no completion marker" in removed.stdout and not target.exists()
        assert _stage(home, hub, converter[0]).returncode == 0  # converted again for the next case


def test_an_in_run_import_older_than_the_staged_commit_is_not_adopted(tmp_path: Path) -> None:
    """A restage moves the commit; an import made before it is of the old commit."""
    target = tmp_path / "nemo_rl" / "org" / "tiny"
    (target / layout.MEGATRON_ITERATION).mkdir(parents=True)
    run_config = target / layout.MEGATRON_ITERATION / megatron.RUN_CONFIG
    run_config.write_text("model: {num_layers: 2}\n")
    import os

    os.utime(run_config, (1_000_000_000, 1_000_000_000))
    said: list[str] = []
    assert megatron.guard(target, said.append, "new", ("org/tiny", 1_000_000_100)) == "partial"
    assert not target.exists() and "no completion marker" in said[0]


def test_a_conversion_of_another_commit_is_not_complete(tmp_path: Path) -> None:
    target = tmp_path / "nemo_rl" / "org" / "tiny"
    (target / layout.MEGATRON_ITERATION).mkdir(parents=True)
    record.write_atomic(target / layout.CONVERTED_MARKER, {"commit": "old", "model": "org/tiny"})
    assert megatron.state(target) == "complete"
    assert megatron.state(target, "old") == "complete"
    assert megatron.state(target, "new") == "partial"
    assert megatron.guard(target, lambda _: None, "new") == "partial" and not target.exists()


def test_the_conversion_dir_follows_nemo_rls_rule(tmp_path: Path) -> None:
    # nemo_rl/models/policy/utils.py L231-254 and megatron_policy_worker.py L488-492 @v0.4.0
    home = tmp_path / "hf"
    assert layout.megatron_dir(home, "Qwen/Qwen2.5-72B-Instruct", {}) == (
        home / "nemo_rl" / "Qwen" / "Qwen2.5-72B-Instruct"
    )
    assert layout.megatron_dir(home, "org/m", {"NRL_MEGATRON_CHECKPOINT_DIR": "/x"}) == Path(
        "/x/org/m"
    )
    local = tmp_path / "weights"
    local.mkdir()
    assert layout.megatron_dir(home, str(local), {}).name == "model_" + str(local).replace("/", "_")
