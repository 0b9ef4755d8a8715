"""`make venv` installs the project: `python -m jobs` and the `rl-jobs` command work from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess_cli

REPO = Path(__file__).resolve().parents[1]


def _outside(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    assert not tmp_path.is_relative_to(REPO)
    return env


@pytest.mark.subprocess_cli
def test_python_m_jobs_runs_from_a_directory_outside_the_repo(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jobs", "recipes", "--json"],
        cwd=tmp_path,
        env=_outside(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "nemo-rl-grpo-math"' in done.stdout


@pytest.mark.subprocess_cli
def test_the_console_script_runs_this_checkout(tmp_path):
    script = Path(sys.executable).parent / "rl-jobs"
    assert script.is_file(), "make venv installs the project (pip install -e .)"
    done = subprocess.run(
        [str(script), "--help"],
        cwd=tmp_path,
        env=_outside(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "submit" in done.stdout and "recipes" in done.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import jobs; print(jobs.__file__)"],
        cwd=tmp_path,
        env=_outside(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert Path(where.stdout.strip()).resolve() == (REPO / "jobs" / "__init__.py").resolve()


def _usage_line(argv: list[str], tmp_path: Path, path: str) -> str:
    done = subprocess.run(
        [*argv, "--help"],
        cwd=tmp_path,
        env={**_outside(tmp_path), "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("Usage:"))


def test_the_program_is_spelled_as_the_user_started_it(tmp_path):
    # A hint is pasted back into a shell: spelled as that shell finds the program again, by
    # name where PATH leads to it, else by its full path.
    bin_dir = str(Path(sys.executable).parent)
    script = str(Path(bin_dir) / "rl-jobs")
    on_path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    off_path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != bin_dir
    )
    assert _usage_line([script], tmp_path, on_path).startswith("Usage: rl-jobs ")
    assert _usage_line([script], tmp_path, off_path).startswith(f"Usage: {script} ")
    module = [sys.executable, "-m", "jobs"]
    assert _usage_line(module, tmp_path, on_path).startswith("Usage: python -m jobs ")
    assert _usage_line(module, tmp_path, off_path).startswith(f"Usage: {sys.executable} -m jobs ")


def test_every_data_file_of_the_packages_is_installed_with_them():
    """A non-editable install carries only the .py files and package-data: every other file the
    program keeps under its packages (recipe configs, payloads, the Ray dashboards) is listed."""
    import tomllib

    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    tracked = subprocess.run(
        ["git", "ls-files", "jobs", "components"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    data = [REPO / f for f in tracked if not f.endswith(".py")]
    assert any(f.suffix == ".json" and "ray_grafana" in f.parts for f in data)
    installed = {
        path
        for package, patterns in package_data.items()
        for pattern in patterns
        for path in (REPO / package).glob(pattern)
    }
    assert [str(f.relative_to(REPO)) for f in data if f not in installed] == []
