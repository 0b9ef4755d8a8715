"""What a live supervisor leaves on the runs root for the re-armer: the `jobs` package it runs,
and its attempts' working dir (gcs:// packages die with the cluster's GCS).

The re-armer (jobs/head/rearm.py) imports the package from `<runs root>/.rearm/current/jobs`
and uploads the kept working dir again for the run's next supervisor. Standard library only:
this runs on the Ray head.
"""

from __future__ import annotations

import json
import os
import shutil
import time

from jobs.head.protocol import Spec
from jobs.head.run_store import RunStore

# How many published versions of the package stay on the runs root (the newest ones).
KEEP_VERSIONS = 3


def keep_working_dir(store: RunStore, spec: Spec) -> None:
    """Copy the attempts' working dir (this job's own cwd: the same gcs:// package) next to the
    record, so a re-armer on a new cluster can upload it again (gcs:// packages die with GCS)."""
    target = store.dir / "working_dir"
    if not spec.runtime_env.get("working_dir") or target.exists():
        return
    tmp = store.dir / f".working_dir.{os.getpid()}"
    shutil.copytree(os.getcwd(), tmp, dirs_exist_ok=True)
    os.replace(tmp, target)


def publish_code(runs_root: str) -> None:
    """Put the `jobs` package this supervisor runs at `<runs root>/.rearm/current/jobs`, where
    the head pod's re-armer sidecar imports it from (the framework image does not carry it;
    components/k8s/raycluster.py `rearm_container`). Versions are folders; `current` is a
    symlink swapped atomically, so a re-armer never imports a half-copied package."""
    import jobs

    base = os.path.join(runs_root, ".rearm")
    version = os.path.join(base, f"v{time.time_ns()}-{os.getpid()}")
    shutil.copytree(
        os.path.dirname(os.path.abspath(jobs.__file__)),
        os.path.join(version, "jobs"),
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    link = os.path.join(base, f".current.{os.getpid()}")
    os.symlink(os.path.basename(version), link)
    os.replace(link, os.path.join(base, "current"))
    old = sorted(n for n in os.listdir(base) if n.startswith("v"))[:-KEEP_VERSIONS]
    for name in old:
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def own_working_dir() -> str | None:
    """This job's working_dir URI: Ray hands a job driver its runtime env in
    RAY_JOB_CONFIG_JSON_ENV_VAR (reference §4.5)."""
    try:
        config = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}"))
        found = config.get("runtime_env", {}).get("working_dir")
    except (ValueError, AttributeError):
        return None
    return str(found) if found else None
