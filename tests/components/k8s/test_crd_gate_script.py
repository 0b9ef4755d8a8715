"""The CRD gate's own script, run by bash with a real kubectl against a loopback stand-in API server.

The command and environment come from the Job manifest the program registers, so this is the
script a cluster would run: CRDs that appear late (each at its own time) are waited for; a CRD
that never appears fails the script once, by name, at the overall deadline; a RayCluster CRD of a
KubeRay without `upgradeStrategy` (before v1.6.0) fails it at once.
"""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from components.k8s.crd_gate import CONTAINER, GKE_INSTALLED_CRDS, RAYCLUSTER_CRD, job_manifest
from tests.components.k8s.kubectl import StandInApiServer, unpack_kubectl

pytestmark = pytest.mark.kubectl


@functools.cache
def _vendored_kuberay_crd() -> dict:
    # 934 KB of YAML: read once, when a test first needs it (not at collection), with the
    # C loader where PyYAML has it.
    path = Path(__file__).resolve().parents[2] / "schemas/kuberay-v1.7.0/ray.io_rayclusters.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(), Loader=loader)


def _kuberay_crd() -> dict:
    """KubeRay v1.7.0's own RayCluster CRD, as vendored for the manifest checks (a copy)."""
    return copy.deepcopy(_vendored_kuberay_crd())


def _kuberay() -> dict[str, dict]:
    """The RayCluster CRD the gate reads, as GKE's add-on would serve it."""
    return {RAYCLUSTER_CRD: _kuberay_crd()}


@pytest.fixture(scope="module")
def kubectl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kubectl")
    unpack_kubectl(directory)
    return directory


def _container() -> dict:
    pod = job_manifest("g", "ns", "g", "system", GKE_INSTALLED_CRDS)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == CONTAINER
    return container


def _run_gate(server: StandInApiServer, kubectl_dir: Path, home: Path, deadline: int, poll: float):
    container = _container()
    env = {e["name"]: e["value"] for e in container["env"]}
    env.update(GATE_DEADLINE_SECONDS=str(deadline), GATE_POLL_SECONDS=str(poll))
    env.update(
        PATH=f"{kubectl_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        HOME=str(home),
        KUBECONFIG=str(server.kubeconfig(home)),
    )
    command = container["command"]
    assert command[0] == "/bin/bash"
    started = time.monotonic()
    # Bounded well past the script's own deadline: the test fails rather than hangs.
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=deadline + 60)
    return result, time.monotonic() - started


def test_four_late_crds_are_each_waited_for_until_the_last_one_is_served(
    kubectl_dir: Path, tmp_path: Path
) -> None:
    appear = dict(zip(GKE_INSTALLED_CRDS, (1.0, 2.0, 3.0, 4.0), strict=True))
    with StandInApiServer(appear, _kuberay()) as server:
        result, elapsed = _run_gate(server, kubectl_dir, tmp_path, deadline=60, poll=0.25)
    assert result.returncode == 0, result.stderr
    assert "all 4 CRDs are served" in result.stdout
    assert 4.0 <= elapsed < 60, elapsed
    # Each CRD is read on its own, and the first ones stop being read once they are served.
    assert set(server.reads) == set(GKE_INSTALLED_CRDS)
    first, last = GKE_INSTALLED_CRDS[0], GKE_INSTALLED_CRDS[-1]
    assert server.reads[first] < server.reads[last]
    print(f"four late CRDs (1-4 s): gate exited 0 after {elapsed:.2f} s")


def test_a_crd_that_never_comes_fails_once_by_name_at_the_deadline(
    kubectl_dir: Path, tmp_path: Path
) -> None:
    never = "podmonitorings.monitoring.googleapis.com"
    appear = {name: (None if name == never else 0.5) for name in GKE_INSTALLED_CRDS}
    deadline = 5
    with StandInApiServer(appear, _kuberay()) as server:
        result, elapsed = _run_gate(server, kubectl_dir, tmp_path, deadline=deadline, poll=0.25)
    assert result.returncode == 1
    assert f"CRDs still missing after {deadline}s: {never}\n" in result.stderr
    assert f"  {never}: not found" in result.stderr
    for other in GKE_INSTALLED_CRDS:
        if other != never:
            assert f"served: {other}" in result.stdout and other not in result.stderr
    # At the deadline, not at once (the old all-at-once `kubectl wait` exited 1 immediately), and
    # not long after it (margin for two busy cores).
    assert deadline <= elapsed < deadline + 20, elapsed
    print(f"one CRD never served, deadline {deadline} s: gate exited 1 after {elapsed:.2f} s")


def test_two_missing_crds_are_both_named(kubectl_dir: Path, tmp_path: Path) -> None:
    appear = {name: None for name in GKE_INSTALLED_CRDS[:2]} | {
        name: 0.0 for name in GKE_INSTALLED_CRDS[2:]
    }
    with StandInApiServer(appear, _kuberay()) as server:
        result, _ = _run_gate(server, kubectl_dir, tmp_path, deadline=2, poll=0.25)
    assert result.returncode == 1
    assert f"CRDs still missing after 2s: {' '.join(GKE_INSTALLED_CRDS[:2])}\n" in result.stderr


def _without_upgrade_strategy(crd: dict) -> dict:
    """The same CRD as KubeRay before v1.6.0 served it: no spec.upgradeStrategy."""
    old = copy.deepcopy(crd)
    for version in old["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop(
            "upgradeStrategy", None
        )
    return old


def test_a_kuberay_crd_with_upgrade_strategy_recreate_passes(
    kubectl_dir: Path, tmp_path: Path
) -> None:
    appear = dict.fromkeys(GKE_INSTALLED_CRDS, 0.0)
    with StandInApiServer(appear, {RAYCLUSTER_CRD: _kuberay_crd()}) as server:
        result, _ = _run_gate(server, kubectl_dir, tmp_path, deadline=30, poll=0.25)
    assert result.returncode == 0, result.stderr
    assert f"served: {RAYCLUSTER_CRD}" in result.stdout


def test_a_kuberay_older_than_1_6_is_refused_at_once_saying_why(
    kubectl_dir: Path, tmp_path: Path
) -> None:
    """Its API server would prune `upgradeStrategy` silently and a RayCluster change would never
    reach the running head: the gate fails now, naming the CRD, the KubeRay version and the fix,
    instead of waiting out its deadline."""
    appear = dict.fromkeys(GKE_INSTALLED_CRDS, 0.0)
    old = _without_upgrade_strategy(_kuberay_crd())
    with StandInApiServer(appear, {RAYCLUSTER_CRD: old}) as server:
        result, elapsed = _run_gate(server, kubectl_dir, tmp_path, deadline=30, poll=0.25)
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert f"{RAYCLUSTER_CRD} is served without spec.upgradeStrategy Recreate" in message
    assert "KubeRay v1.6.0 or later" in message and "pulumi up again" in message
    assert f"served: {RAYCLUSTER_CRD}" not in result.stdout
    assert elapsed < 20, elapsed
