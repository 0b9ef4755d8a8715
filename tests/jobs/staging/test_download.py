"""Staging a model's snapshot: pinned, resumable, reused, loadable offline, refusals by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.staging import entry, layout, record
from tests.fakehub import FakeHub, Repo
from tests.jobs.staging.conftest import run_module

# The staging modules run as processes against the stand-in Hub (tests/fakehub.py).
pytestmark = pytest.mark.hub

STAGE = "jobs.staging.stage"


def test_stage_pins_the_commit_and_an_offline_load_by_name_gets_it(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    first = tiny.branches["main"]
    done = run_module(STAGE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    staged = record.load(home, "org/tiny")
    assert staged is not None and staged.commit == first
    assert set(staged.files) == {"config.json", "model.safetensors", "tokenizer.json"}
    assert layout.ref_file(home, "org/tiny").read_text() == first
    assert f"stage complete: org/tiny@{first}" in done.stdout
    # The Hub moves on; a run loads by name, offline, and gets the staged commit: per file,
    # as transformers' cached_file does, and by pattern, as vLLM's weight download does.
    tiny.push({"config.json": b'{"model_type": "llama"}'})
    hub.__exit__()
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from huggingface_hub import hf_hub_download, snapshot_download\n"
            "print(open(hf_hub_download('org/tiny', 'config.json')).read())\n"
            "print(snapshot_download('org/tiny', allow_patterns=['*.safetensors', '*.json']))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "qwen2" in loaded.stdout
    assert loaded.stdout.strip().endswith(f"snapshots/{first}")


def test_a_download_cut_half_way_resumes_from_the_bytes_on_disk(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    # Larger than huggingface_hub's 10 MB read chunk, so the part before the cut is on disk.
    tiny.push({**tiny.commits[tiny.branches["main"]], "model.safetensors": os.urandom(24 * 2**20)})
    hub.cut_first_get.add("model.safetensors")
    done = run_module(STAGE, ["--model", "org/tiny"], home, hub.url)
    if done.returncode != 0:  # the client gave up on the cut: the next stage resumes
        assert "resumes from what is on disk" in done.stderr
        done = run_module(STAGE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    resumed = [r for p, r in hub.file_gets() if p.endswith("model.safetensors") and r]
    assert resumed and int(resumed[-1].split("=")[1].rstrip("-")) > 0
    staged = record.load(home, "org/tiny")
    assert staged is not None and staged.is_intact(home)
    blob = layout.snapshot_dir(home, "org/tiny", staged.commit) / "model.safetensors"
    assert blob.read_bytes() == tiny.commits[staged.commit]["model.safetensors"]


def test_a_staged_model_is_reused_without_contacting_the_hub(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    assert run_module(STAGE, ["--model", "org/tiny"], home, hub.url).returncode == 0
    hub.requests.clear()
    again = run_module(STAGE, ["--model", "org/tiny"], home, hub.url)
    assert again.returncode == 0, again.stderr
    assert "already staged" in again.stdout
    assert hub.requests == []


def test_a_lost_file_makes_the_record_stale_and_the_stage_fetches_it_again(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    assert run_module(STAGE, ["--model", "org/tiny"], home, hub.url).returncode == 0
    staged = record.load(home, "org/tiny")
    assert staged is not None
    (layout.snapshot_dir(home, "org/tiny", staged.commit) / "tokenizer.json").unlink()
    assert not staged.is_intact(home)
    again = run_module(STAGE, ["--model", "org/tiny"], home, hub.url)
    assert again.returncode == 0, again.stderr
    assert staged.is_intact(home)


def test_unknown_model_revision_and_malformed_id_are_refused_by_name(
    tmp_path: Path, hub: FakeHub, tiny: Repo
) -> None:
    home = tmp_path / "hf"
    nope = run_module(STAGE, ["--model", "org/nope"], home, hub.url)
    assert nope.returncode == 1 and "'org/nope' is not on the Hub" in nope.stderr
    rev = run_module(STAGE, ["--model", "org/tiny", "--revision", "v9"], home, hub.url)
    assert rev.returncode == 1 and "no revision 'v9'" in rev.stderr
    bad = run_module(STAGE, ["--model", "../../etc"], home, hub.url)
    assert bad.returncode == 1 and "--model '../../etc'" in bad.stderr
    assert not layout.record_file(home, "org/nope").exists()
    assert not (home / "hub").exists() or not any((home / "hub").iterdir())


@pytest.mark.parametrize("module", [STAGE, "jobs.staging.ensure"])
def test_a_hub_that_does_not_answer_is_named_with_the_ways_on_and_no_traceback(
    tmp_path: Path, module: str
) -> None:
    """A clear word when the Hub is unreachable: `stage` and an attempt's first step
    name the endpoint and HF_ENDPOINT, a mirror and a directory on Lustre, in a few lines."""
    import socket

    with socket.socket() as closed:  # a loopback port nothing listens on: connection refused
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    home = tmp_path / "hf"
    done = run_module(module, ["--model", "org/tiny"], home, endpoint, timeout=120)
    assert done.returncode == entry.HUB_UNREACHABLE_EXIT  # the supervisor gives up at once on it
    assert f"cannot reach the Hugging Face Hub at {endpoint} (HF_ENDPOINT)" in done.stderr
    assert "Hub mirror" in done.stderr and "--set policy.model_name=DIR" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 3, done.stderr
    assert not layout.record_file(home, "org/tiny").exists()
