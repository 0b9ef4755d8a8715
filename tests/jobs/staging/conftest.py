"""Fixtures for the staging tests: a stand-in Hub on loopback and the staging entry points run as the job runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakehub import FakeHub, Repo

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as served:
        yield served


@pytest.fixture
def tiny(hub: FakeHub) -> Repo:
    repo = Repo()
    hub.repos["org/tiny"] = repo
    repo.push(
        {
            "config.json": b'{"model_type": "qwen2"}',
            "model.safetensors": os.urandom(3 * 2**20),
            "tokenizer.json": b"{}",
            "original/consolidated.pth": b"x" * 1000,
        }
    )
    return repo


def run_module(
    module: str,
    args: list[str],
    hf_home: Path,
    endpoint: str,
    offline: bool = True,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` with the job's environment: HF_HOME, the Hub, offline set."""
    env = {
        **os.environ,
        "HF_HOME": str(hf_home),
        "HF_ENDPOINT": endpoint,
        "PYTHONPATH": str(REPO_ROOT),
    }
    env.pop("HF_TOKEN", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=hf_home.parent,
    )
