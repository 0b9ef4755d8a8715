"""The export payload as the cluster runs it: a real `python3` process on a folder standing in for
Lustre, with the `jobs` package on PYTHONPATH as Ray's py_modules puts it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from jobs.runs import export
from jobs.runs.plan import JOBS_REPO
from tests.jobs.head.test_checkpoints import nemo_step

PYTHON3 = shutil.which("python3")
pytestmark = pytest.mark.skipif(PYTHON3 is None, reason="no python3 on PATH")


def run_payload(*args: str) -> subprocess.CompletedProcess[str]:
    # Only JOBS_REPO on the path, not the venv: the payload needs the standard library alone.
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(JOBS_REPO)}
    return subprocess.run(
        [PYTHON3, str(export.PAYLOAD / export.SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_checkpoint_fails_with_where_it_looked(tmp_path):
    done = run_payload(
        "--framework",
        "nemo-rl",
        "--backend",
        "dcp",
        "--checkpoint-dir",
        str(tmp_path / "checkpoints"),
        "--out",
        str(tmp_path / "hf/step_{step}"),
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"export: no checkpoint in {tmp_path / 'checkpoints'}: ")
    assert not (tmp_path / "hf").exists()


def test_a_consolidated_dtensor_v2_checkpoint_is_copied_with_the_run_tokenizer(tmp_path):
    ckpts = tmp_path / "checkpoints"
    nemo_step(ckpts, "step_2", weights="v2-consolidated")
    nemo_step(ckpts, "step_4", weights="v2-consolidated")
    nemo_step(ckpts, "tmp_step_6", weights="v2-consolidated")
    done = run_payload(
        "--framework",
        "nemo-rl",
        "--backend",
        "dcp",
        "--checkpoint-dir",
        str(ckpts),
        "--out",
        str(tmp_path / "hf/step_{step}"),
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "hf" / "step_4"
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "model-00001-of-00001.safetensors",
        "tokenizer.json",
    ]
    assert f"export: done: {out}" in done.stdout


def test_an_existing_output_is_not_overwritten(tmp_path):
    ckpts = tmp_path / "checkpoints"
    nemo_step(ckpts, "step_2", weights="v2-consolidated")
    (tmp_path / "hf" / "step_2").mkdir(parents=True)
    (tmp_path / "hf" / "step_2" / "keep").write_text("mine")
    done = run_payload(
        "--framework",
        "nemo-rl",
        "--backend",
        "dcp",
        "--checkpoint-dir",
        str(ckpts),
        "--out",
        str(tmp_path / "hf/step_{step}"),
        "--step",
        "2",
    )
    assert done.returncode == 1
    assert "already exists; delete it or pass another --out to export step 2 again" in done.stderr
    assert (tmp_path / "hf" / "step_2" / "keep").read_text() == "mine"


def test_a_converter_that_is_missing_is_reported_not_hidden(tmp_path):
    # A DCP v1 checkpoint plans `uv run ...` in /opt/nemo-rl, which this machine lacks: the
    # payload must fail (non-zero) rather than report success.
    ckpts = tmp_path / "checkpoints"
    nemo_step(ckpts, "step_2", weights="dcp")
    done = run_payload(
        "--framework",
        "nemo-rl",
        "--backend",
        "dcp",
        "--checkpoint-dir",
        str(ckpts),
        "--out",
        str(tmp_path / "hf/step_{step}"),
    )
    assert done.returncode == 127
    assert (
        done.stderr.startswith("export: cannot run the converter: ")
        and "Traceback" not in done.stderr
    )
    assert "export: running uv run python examples/converters/convert_dcp_to_hf.py" in done.stdout
    assert "export: done" not in done.stdout
