"""`jobs stage` on a real local Ray cluster: the stage job downloads through the real client and the CLI shows its progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.staging import layout, record
from tests.fakehub import FakeHub, Repo
from tests.jobs.conftest import clean_env, run_cli

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]


def test_stage_runs_as_a_ray_job_and_leaves_the_pinned_snapshot(
    ray_url: str, ray_client, tmp_path: Path
) -> None:
    home = tmp_path / "hf"
    with FakeHub() as hub:
        repo = Repo()
        hub.repos["org/tiny"] = repo
        commit = repo.push({"config.json": b"{}", "model.safetensors": b"w" * 4096})
        done = run_cli(
            "stage",
            "org/tiny",
            "--hf-home",
            str(home),
            "--address",
            ray_url,
            env=clean_env(HF_ENDPOINT=hub.url),
            timeout=240,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"stage complete: org/tiny@{commit}" in done.stdout + done.stderr
    staged = record.load(home, "org/tiny")
    assert staged is not None and staged.commit == commit and staged.is_intact(home)
    assert layout.ref_file(home, "org/tiny").read_text() == commit
    info = ray_client.get_job_info("stage-org--tiny-1")
    assert info.metadata["kind"] == "stage" and info.metadata["model"] == "org/tiny"
    listed = run_cli("list", "--json", "--address", ray_url)
    assert "stage-org--tiny-1" in listed.stdout


def test_a_stage_that_cannot_reach_the_hub_fails_with_the_reason(
    ray_url: str, tmp_path: Path
) -> None:
    with FakeHub() as hub:
        done = run_cli(
            "stage",
            "org/absent",
            "--hf-home",
            str(tmp_path / "hf"),
            "--address",
            ray_url,
            "--json",
            env=clean_env(HF_ENDPOINT=hub.url),
            timeout=240,
        )
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "FAILED"
    assert "'org/absent' is not on the Hub" in done.stderr
