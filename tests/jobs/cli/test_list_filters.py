"""`list --status S --since T --limit N` on a real local Ray."""

from __future__ import annotations

import json
import uuid

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app

pytestmark = pytest.mark.ray


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"RAY_ADDRESS": None, "COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def _runs(ray_url: str, *filters: str) -> list[str]:
    code, out, err = cli("list", "--address", ray_url, "--json", *filters)
    assert code == 0, err
    return [r["run"] for r in json.loads(out)]


def test_list_filters_by_status_start_and_count(ray_url):
    tag = uuid.uuid4().hex[:8]
    ok, bad = f"ok-{tag}", f"bad-{tag}"
    for run, code in ((ok, 0), (bad, 3)):
        done = cli(
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--follow",
            "--",
            "python",
            "-c",
            f"raise SystemExit({code})",
        )
        assert done[0] == (0 if code == 0 else 1), done[2]
    failed = _runs(ray_url, "--status", "failed")
    assert bad in failed and ok not in failed
    assert _runs(ray_url, "--limit", "1") == [bad]  # the newest
    assert _runs(ray_url, "--since", "2099-01-01") == []
    assert {ok, bad} <= set(_runs(ray_url, "--since", "1h"))
    code, out, err = cli("list", "--address", ray_url, "--status", "done")
    assert code == 2 and "--status 'done' is not a run status" in err, err
    code, out, err = cli("list", "--runs-root", "/tmp", "--limit", "1")
    assert code == 2 and "not --runs-root" in err, err
