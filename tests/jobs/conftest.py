"""Fixtures for the jobs tests: one real loopback Ray head per session, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ray.job_submission import JobSubmissionClient

from jobs import localray

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_head() -> Iterator[localray.LocalRay]:
    head = localray.start(num_cpus=2)
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture(scope="session")
def ray_url(ray_head: localray.LocalRay) -> str:
    return ray_head.dashboard_url


@pytest.fixture(scope="session")
def ray_client(ray_url: str) -> JobSubmissionClient:
    return JobSubmissionClient(ray_url)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "JOBS_DEBUG")}
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
            cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`python -m jobs ...` as a real process, so exit codes and stderr are the real ones."""
    return subprocess.run([sys.executable, "-m", "jobs", *args], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def wait_until(predicate: Callable[[], bool], timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purpose.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
