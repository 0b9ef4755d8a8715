"""The gIB installer DaemonSet: pinned image per machine, GPU nodes only, and host dirs Ray reads."""

from __future__ import annotations

import pytest

from components.catalogue import MACHINES, NCCL_GIB_INSTALLER_IMAGES
from components.k8s import raycluster
from components.k8s.nccl import HOST_GIB_DIR, HOST_NVIDIA_LIB_DIR, nccl_installer_manifest
from tests.components.k8s.manifests import validate_core


@pytest.mark.parametrize("machine_type", sorted(MACHINES))
def test_installer_image_is_the_catalogue_pin_for_the_machine(machine_type: str) -> None:
    spec = nccl_installer_manifest(MACHINES[machine_type])["spec"]["template"]["spec"]
    installer = next(c for c in spec["initContainers"] if c["name"] == "nccl-rdma-installer")
    assert installer["image"] == NCCL_GIB_INSTALLER_IMAGES[machine_type]


@pytest.mark.parametrize("machine_type", sorted(MACHINES))
def test_installer_runs_in_kube_system_only_on_this_machines_gpus(machine_type: str) -> None:
    machine = MACHINES[machine_type]
    manifest = nccl_installer_manifest(machine)
    assert manifest["metadata"]["namespace"] == "kube-system"
    terms = manifest["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [
        {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": [machine.accelerator_type]}]}]


def test_installer_tolerates_gpu_taints_and_is_node_critical() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    assert {"operator": "Exists"} in spec["tolerations"]
    assert spec["priorityClassName"] == "system-node-critical"


def test_installer_fills_exactly_the_host_dirs_the_ray_workers_mount() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    host_paths = {v["hostPath"]["path"] for v in spec["volumes"]}
    assert host_paths == {HOST_GIB_DIR, HOST_NVIDIA_LIB_DIR}
    assert HOST_GIB_DIR == raycluster.GIB_HOST_PATH
    assert HOST_NVIDIA_LIB_DIR.startswith(raycluster.NVIDIA_HOST_PATH + "/")


def test_only_init_containers_are_privileged() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    assert all("securityContext" not in c for c in spec["containers"])
    assert all("@sha256:" in c["image"] for c in spec["containers"])


@pytest.mark.parametrize("machine_type", sorted(MACHINES))
def test_daemonset_is_a_valid_kubernetes_object(machine_type: str) -> None:
    validate_core(nccl_installer_manifest(MACHINES[machine_type]))
