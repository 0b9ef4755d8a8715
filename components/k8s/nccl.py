"""The NCCL gIB (RDMA) plugin installer: a DaemonSet that puts the plugin on every GPU node.

Ray workers find the plugin through hostPaths (`contract.GIB_HOST_PATH`, `.../nvidia/lib64`)
that only this DaemonSet fills; without it NCCL falls back to TCP over eth0. The shape follows
reference 3.2 (GoogleCloudPlatform/container-engine-accelerators `gpudirect-rdma`), rewritten
here with the image pinned per machine type from the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalogue import NCCL_GIB_INSTALLER_IMAGES, MachineSpec
from components.contract import GIB_HOST_PATH, NVIDIA_HOST_PATH, RDMA_NIC_COUNT
from components.k8s.provider import KubeTarget, typed_object

NAME = "nccl-rdma-installer"
NAMESPACE = "kube-system"
HOST_NVIDIA_LIB_DIR = f"{NVIDIA_HOST_PATH}/lib64"
# The work is done by the init containers; this only keeps the pod Running. Pinned by digest
# (as the upstream manifest does) so the tag can never move under it.
PAUSE_IMAGE = (
    "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
)
SYSCTL_IMAGE = "alpine:3.20"
# RDMA NIC names on A4 / A3 Ultra nodes (gpu<N>rdma0): their asymmetric routes make the kernel
# log every packet as martian, flooding the node's journal.
_RDMA_HOST_NICS = tuple(f"gpu{i}rdma0" for i in range(RDMA_NIC_COUNT))

_INSTALL_SCRIPT = """set -eu
/scripts/container_entry.sh install --install-nccl
cp -r /var/lib/gib/lib64/. /host/nvidia-lib64/
cp -r /var/lib/gib/. /host/gib/
"""


def installer_image(machine: MachineSpec) -> str:
    try:
        return NCCL_GIB_INSTALLER_IMAGES[machine.machine_type]
    except KeyError:
        raise ValueError(f"no gIB installer image pinned for {machine.machine_type}") from None


def nccl_installer_manifest(machine: MachineSpec) -> dict[str, Any]:
    labels = {"k8s-app": NAME}
    sysctls = "\n".join(
        f"sysctl -w net.ipv4.conf.{nic}.log_martians=0 || true" for nic in _RDMA_HOST_NICS
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            # cluster-toolkit's default (reference 3.2): a plugin upgrade never reaches every GPU
            # node at once.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # Must run before (and survive pressure from) the training pods it serves.
                    "priorityClassName": "system-node-critical",
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
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
                            }
                        }
                    },
                    # GPU nodes carry nvidia.com/gpu and may carry spot / termination taints.
                    "tolerations": [{"operator": "Exists"}],
                    # net.ipv4.conf.* sysctls are per network namespace: they must run in the host's.
                    "hostNetwork": True,
                    "hostPID": True,
                    "volumes": [
                        {
                            "name": "nvidia-lib64",
                            "hostPath": {"path": HOST_NVIDIA_LIB_DIR, "type": "DirectoryOrCreate"},
                        },
                        {
                            "name": "gib",
                            "hostPath": {"path": GIB_HOST_PATH, "type": "DirectoryOrCreate"},
                        },
                    ],
                    "initContainers": [
                        {
                            "name": "disable-log-martian",
                            "image": SYSCTL_IMAGE,
                            "command": ["/bin/sh", "-c", sysctls],
                            "securityContext": {"privileged": True},
                        },
                        {
                            "name": "nccl-rdma-installer",
                            "image": installer_image(machine),
                            "command": ["/bin/sh", "-c", _INSTALL_SCRIPT],
                            "resources": {"requests": {"cpu": "150m"}},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": "nvidia-lib64", "mountPath": "/host/nvidia-lib64"},
                                {"name": "gib", "mountPath": "/host/gib"},
                            ],
                        },
                    ],
                    "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
                },
            },
        },
    }


@dataclass(frozen=True)
class NcclInstallerArgs:
    target: KubeTarget
    machine: MachineSpec


class NcclInstaller(pulumi.ComponentResource):
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(
        self, name: str, args: NcclInstallerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        manifest = nccl_installer_manifest(args.machine)
        super().__init__("rl-on-gke:k8s:NcclInstaller", name, None, opts)
        self.daemon_set = typed_object(
            k8s.apps.v1.DaemonSet, f"{name}-daemonset", manifest, args.target.options(self)
        )
        self.register_outputs({"image": installer_image(args.machine)})
