"""`python -m jobs run` and `logs` as users meet them, against a real local Ray head with a
1-GPU raylet (tests/jobs/gpu_node.py): run names in a shell loop, the command's own GPUs, every
attempt's log."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app

from tests.jobs.conftest import REPO, clean_env
from tests.jobs.gpu_node import GpuNode, wait_gpus

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]


@pytest.fixture(scope="module")
def gpu_node(ray_head) -> Iterator[GpuNode]:
    node = GpuNode(ray_head, gpus=1)
    node.start()
    try:
        wait_gpus(ray_head.dashboard_url, 1)
        yield node
    finally:
        node.close()


def _json_values(text: str) -> list[dict]:
    """The JSON documents printed one after another (each --json output is one document)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def test_default_named_runs_started_within_a_second_all_start(ray_url, ray_client, gpu_node):
    """The same in this process, where a `run` takes a fraction of a second: on the old names
    (unique per second) two of these four always collided."""
    runner = CliRunner()
    started = time.monotonic()
    results = [runner.invoke(app, ["run", "--json", "--address", ray_url, "--", "true"],
                             env={"RAY_ADDRESS": None, "JOBS_DEBUG": None}) for _ in range(4)]
    took = time.monotonic() - started
    for result in results:
        assert result.exit_code == 0, result.stderr
    runs = [json.loads(r.stdout)["run"] for r in results]
    assert len(set(runs)) == 4, (runs, f"{took:.1f} s")


def test_three_default_named_runs_in_a_shell_loop_all_start(ray_url, ray_client, gpu_node):
    """Issue 19 #3: names were unique per second, so the loop's second `run` exited 2."""
    loop = (f'for i in 1 2 3; do "{sys.executable}" -m jobs run --json --address {ray_url} '
            '-- true || exit 1; done')
    done = subprocess.run(["bash", "-c", loop], cwd=REPO, env=clean_env(), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    runs = [view["run"] for view in _json_values(done.stdout)]
    assert len(set(runs)) == 3 and all(r.startswith("run-") for r in runs)
    assert runs == sorted(runs)  # started one after the other: the names sort in that order
    known = {j.submission_id for j in ray_client.list_jobs()}
    assert {f"{r}-a1" for r in runs} <= known
