"""The gIB installer DaemonSet: pinned image per machine, GPU nodes only, and host dirs Ray reads."""

from __future__ import annotations

import pytest

from components.catalogue import MACHINES, NCCL_GIB_INSTALLER_IMAGES
from components.k8s.names import K8sNames
from components.k8s.nccl import nccl_installer_manifest
from components.k8s.raycluster import RayClusterInputs, worker_group_spec
from tests.components.k8s.conftest import make_config
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
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {
                    "key": "cloud.google.com/gke-accelerator",
                    "operator": "In",
                    "values": [machine.accelerator_type],
                }
            ]
        }
    ]


def test_installer_tolerates_gpu_taints_and_is_node_critical() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    assert {"operator": "Exists"} in spec["tolerations"]
    assert spec["priorityClassName"] == "system-node-critical"


def test_installer_fills_exactly_the_host_dirs_the_ray_workers_mount() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    filled = {v["hostPath"]["path"] for v in spec["volumes"]}
    config = make_config()
    inputs = RayClusterInputs.for_stack(
        config, K8sNames.for_stack(config), system_pool_name="system"
    )
    worker_volumes = worker_group_spec(inputs)["template"]["spec"]["volumes"]
    mounted = {v["hostPath"]["path"] for v in worker_volumes if "hostPath" in v}

    def within(path: str, root: str) -> bool:
        return path == root or path.startswith(root + "/")

    # Every directory the installer fills is seen by the workers, and every host directory the
    # workers mount is one the installer fills (or holds one).
    assert all(any(within(path, root) for root in mounted) for path in filled)
    assert all(any(within(path, root) for path in filled) for root in mounted)


def test_only_init_containers_are_privileged() -> None:
    spec = nccl_installer_manifest(MACHINES["a4-highgpu-8g"])["spec"]["template"]["spec"]
    assert all("securityContext" not in c for c in spec["containers"])
    assert all("@sha256:" in c["image"] for c in spec["containers"])


@pytest.mark.parametrize("machine_type", sorted(MACHINES))
def test_daemonset_is_a_valid_kubernetes_object(machine_type: str) -> None:
    validate_core(nccl_installer_manifest(MACHINES[machine_type]))
