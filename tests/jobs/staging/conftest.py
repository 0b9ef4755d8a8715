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
# The interpreters the staging modules run under: this venv's (the newest pinned libraries) and
# .venv-image's, with the versions the NeMo RL v0.4.0 image has (requirements-image.txt, made by
# `make venv-image`, which `make test` runs): a job's first step runs on that image.
INTERPRETERS = {
    "venv": Path(sys.executable),
    "nemo-rl-image": REPO_ROOT / ".venv-image" / "bin" / "python",
}
_interpreter: list[Path] = [INTERPRETERS["venv"]]


@pytest.fixture(autouse=True, params=sorted(INTERPRETERS))
def staging_python(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Every staging test under each interpreter; run_module starts the one of the moment."""
    chosen = INTERPRETERS[request.param]
    if not chosen.exists():
        pytest.skip(f"{chosen} is missing: `make venv-image` installs requirements-image.txt")
    _interpreter[0] = chosen
    try:
        yield chosen
    finally:
        _interpreter[0] = INTERPRETERS["venv"]


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
        [str(_interpreter[0]), "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=hf_home.parent,
    )
