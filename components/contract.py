"""What the program, the Kubernetes layer, `jobs` and the policy pack agree on, defined once.

Pure (no Pulumi import) so the jobs CLI and the policy pack can share it: the output names the
stack exports (their model is components/stack_outputs.py, built on this module), the paths every
Ray pod sees, the labels and counts the policy pack checks, the secret env names, and the two
commands a person runs to reach a cluster.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

# The RL frameworks a stack's Ray image can be built for (their pins: components/catalogue.py
# FRAMEWORKS); the stack config, the recipes and `jobs --framework` all take these names.
Framework = Literal["nemo-rl", "verl"]
FRAMEWORK_NAMES: tuple[str, ...] = get_args(Framework)

# ----------------------------------------------------------------------------- paths in pods

# Managed Lustre is mounted here on the Ray head and every worker (components/k8s/storage.py).
LUSTRE_MOUNT_PATH = "/lustre"
# One directory per run: checkpoints, logs and metrics of every attempt of that run.
RUNS_ROOT = f"{LUSTRE_MOUNT_PATH}/runs"
DATASETS_ROOT = f"{LUSTRE_MOUNT_PATH}/datasets"
# One model cache for every run: a 72B download is ~150 GB and must not repeat per pod.
HF_HOME_PATH = f"{LUSTRE_MOUNT_PATH}/huggingface_cache"
HF_HOME_ENV = "HF_HOME"

# The gIB NCCL plugin: the installer DaemonSet fills the host directory, workers mount it
# (GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma; reference 3.2 / 3.6).
GIB_HOST_PATH = "/home/kubernetes/bin/gib"
GIB_MOUNT_PATH = "/usr/local/gib"
NVIDIA_HOST_PATH = "/home/kubernetes/bin/nvidia"
NVIDIA_MOUNT_PATH = "/usr/local/nvidia"

# --------------------------------------------------------------------------- labels, counts

# Set on the Lustre instance from `lustre.protect`; the policy pack checks it against the
# resource's protect option.
PROTECT_LABEL = "rl-on-gke-protect"
# GKE's own node labels (GKE docs "node labels"): pool name and accelerator type.
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
# KubeRay labels every pod of a RayCluster with the cluster's name (kuberay utils/constant.go).
RAY_CLUSTER_LABEL = "ray.io/cluster"
# Our own node label: which pool a node belongs to by role (system, gpu, code-sandbox).
NODE_ROLE_LABEL = "rl-on-gke/role"
# A4 and A3 Ultra have eight RDMA NICs, one per GPU (reference 2.4 / 2.10).
RDMA_NIC_COUNT = 8
# The code-contests executor (rewards.codeSandbox): the role of its gVisor node pool, that pool's
# name, and the suffix of its Kubernetes objects' names; the policy pack finds it by them.
CODE_SANDBOX = "code-sandbox"
# The RuntimeClass GKE creates when a pool has GKE Sandbox enabled (GKE "GKE Sandbox" docs).
GVISOR_RUNTIME_CLASS = "gvisor"

# ----------------------------------------------------------------------------------- secrets

# Stack secret config key -> the env var training pods read it as (from a Kubernetes Secret).
# codeSandboxToken: the bearer token of the code-execution service (rewards.codeSandbox); the Ray pods
# and the service read it from the same Secret (components/k8s/sandbox.py TOKEN_ENV).
SECRET_ENV: Mapping[str, str] = {
    "hfToken": "HF_TOKEN",
    "wandbApiKey": "WANDB_API_KEY",
    "codeSandboxToken": "CODE_SANDBOX_TOKEN",
}
SECRET_CONFIG_KEYS: tuple[str, ...] = tuple(SECRET_ENV)
# The bearer token the code sandbox service and the Ray pods share (jobs/rewards reads the same
# name, shipped without components/: tests/test_layout.py holds the two equal).
CODE_SANDBOX_TOKEN_ENV = SECRET_ENV["codeSandboxToken"]

# ---------------------------------------------------------------------------- Lustre mount

_MOUNT_POINT = re.compile(r"^(?P<ip>[^@]+)@tcp:/(?P<filesystem>[A-Za-z][A-Za-z0-9]{0,7})$")


@dataclass(frozen=True)
class LustreMount:
    ip: str
    filesystem: str


def parse_mount_point(mount_point: str) -> LustreMount:
    """`10.16.0.2@tcp:/lustrefs` -> ip `10.16.0.2`, filesystem `lustrefs` (Managed Lustre's
    mountPoint). The filesystem is the bare fsname, as the Lustre CSI examples use it."""
    match = _MOUNT_POINT.match(mount_point)
    if not match:
        raise ValueError(
            f"Lustre mount point {mount_point!r} is not of the form IP@tcp:/FILESYSTEM"
        )
    try:
        ip = str(ipaddress.IPv4Address(match["ip"]))
    except ValueError:
        raise ValueError(
            f"Lustre mount point {mount_point!r} does not start with an IPv4 address"
        ) from None
    return LustreMount(ip=ip, filesystem=match["filesystem"])


# ------------------------------------------------------------------------------- commands


def get_credentials_command(cluster: str, location: str, project: str, dns_endpoint: bool) -> str:
    """What a person runs for kubectl access; --dns-endpoint writes the IAM-gated endpoint."""
    flag = " --dns-endpoint" if dns_endpoint else ""
    return (
        f"gcloud container clusters get-credentials {cluster} --location {location} "
        f"--project {project}{flag}"
    )


def port_forward_command(namespace: str, service: str, port: int) -> str:
    return f"kubectl port-forward -n {namespace} svc/{service} {port}:{port}"


def kube_context(project: str, location: str, cluster: str) -> str:
    """The context name `gcloud container clusters get-credentials` writes."""
    return f"gke_{project}_{location}_{cluster}"
