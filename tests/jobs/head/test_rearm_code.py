"""What a supervisor leaves for the re-armer: its `jobs` package (versions swapped atomically,
the newest three kept), the attempts' working dir, and its own working_dir URI."""

from __future__ import annotations

import json

from jobs.head import rearm_code
from jobs.head.clock import REAL
from jobs.head.files import LOCAL
from jobs.head.protocol import Spec
from jobs.head.run_store import RunStore
from tests.jobs.head.test_protocol import spec


def test_the_jobs_package_is_published_for_the_rearmer_and_current_swaps(tmp_path):
    rearm_code.publish_code(str(tmp_path))
    first = (tmp_path / ".rearm" / "current").resolve()
    assert (tmp_path / ".rearm" / "current" / "jobs" / "head" / "rearm.py").is_file()
    for _ in range(4):
        rearm_code.publish_code(str(tmp_path))
    assert (tmp_path / ".rearm" / "current").resolve() != first
    assert len([p for p in (tmp_path / ".rearm").iterdir() if p.name.startswith("v")]) == 3


def test_the_working_dir_is_kept_once_and_only_when_the_attempts_have_one(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    (cwd / "pkg").mkdir(parents=True)
    (cwd / "pkg" / "train.py").write_text("print(1)")
    monkeypatch.chdir(cwd)
    store = RunStore(str(tmp_path / "runs"), "r", REAL, LOCAL)
    store.dir.mkdir(parents=True)
    rearm_code.keep_working_dir(store, _spec({}))
    assert not (store.dir / "working_dir").exists()
    rearm_code.keep_working_dir(store, _spec({"working_dir": "gcs://_ray_pkg_x.zip"}))
    assert (store.dir / "working_dir" / "pkg" / "train.py").read_text() == "print(1)"
    (cwd / "pkg" / "train.py").write_text("print(2)")
    rearm_code.keep_working_dir(store, _spec({"working_dir": "gcs://_ray_pkg_x.zip"}))
    assert (store.dir / "working_dir" / "pkg" / "train.py").read_text() == "print(1)"


def test_own_working_dir_is_read_from_rays_job_config(monkeypatch):
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    assert rearm_code.own_working_dir() is None
    config = {"runtime_env": {"working_dir": "gcs://_ray_pkg_y.zip"}}
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps(config))
    assert rearm_code.own_working_dir() == "gcs://_ray_pkg_y.zip"
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "not json")
    assert rearm_code.own_working_dir() is None
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "[1]")
    assert rearm_code.own_working_dir() is None


def _spec(runtime_env: dict[str, str]) -> Spec:
    return spec(runtime_env=runtime_env)
