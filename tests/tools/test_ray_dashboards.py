"""tools/ray_dashboards.py: the Ray that runs it writes its own dashboards into a folder named for
its version, and refuses when the shell would bend them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ray

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return subprocess.run(
        [sys.executable, "tools/ray_dashboards.py", "--out", str(out)],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_running_ray_writes_its_dashboards_under_its_version(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / ray.__version__).iterdir())
    assert written == ["rayDefaultDashboard.json", "rayTrainDashboard.json"]
    board = json.loads((tmp_path / ray.__version__ / "rayDefaultDashboard.json").read_text())
    assert board["uid"] == "rayDefaultDashboard" and board["panels"]


def test_a_dashboard_setting_in_the_environment_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    """Ray's factory takes a dashboard's uid and filters from RAY_GRAFANA_* variables: files
    written under them would not be the Ray's own."""
    result = _run(tmp_path, RAY_GRAFANA_DEFAULT_DASHBOARD_UID="mine")
    assert result.returncode == 2
    assert "RAY_GRAFANA_DEFAULT_DASHBOARD_UID" in result.stderr
    assert not any(tmp_path.iterdir())
