"""The RayCluster (`ray.io/v1`): an unpreemptible CPU head and one fixed-size GPU worker group.

Shape from reference 3.6 (kubernetes-engine-samples verl / NeMo RL clusters) and 3.7 (KubeRay
v1.7.0 types). The head sits on the on-demand system pool with `num-cpus: "0"` so it only runs
the GCS, dashboard and job drivers: losing it loses the whole cluster (ray#39787, kuberay#2153),
so nothing that can be preempted or starve it may land there.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalogue import FRAMEWORKS, RAY_DASHBOARD_PORT, RAY_METRICS_PORT, FrameworkSpec, MachineSpec
from components.config import StackConfig
from components.contract import (
    ACCELERATOR_LABEL,
    GIB_HOST_PATH,
    GIB_MOUNT_PATH,
    HF_HOME_ENV,
    HF_HOME_PATH,
    LUSTRE_MOUNT_PATH,
    NODE_POOL_LABEL,
    NVIDIA_HOST_PATH,
    NVIDIA_MOUNT_PATH,
)
from components.k8s.names import K8sNames
from components.k8s.networks import pod_network_annotations
from components.k8s.provider import KubeTarget, custom_object

API_VERSION = "ray.io/v1"
HEAD_CONTAINER = "ray-head"
WORKER_CONTAINER = "ray-worker"
WORKER_GROUP = "gpu-workers"
GPU_RESOURCE = "nvidia.com/gpu"
# Ports KubeRay expects by name on the head (kuberay utils/constant.go; reference 3.6).
HEAD_PORTS = (
    ("gcs-server", 6379),
    ("dashboard", RAY_DASHBOARD_PORT),
    ("client", 10001),
    ("metrics", RAY_METRICS_PORT),
)
# Above every training pod (default 0) and far below system-cluster-critical (2e9).
HEAD_PRIORITY = 1_000_000

# NCCL settings for gIB on A4 / A3 Ultra: NeMo RL's worker env plus the tuning verl sets from
# the plugin's set_nccl_env.sh (reference 3.6). Only the tuner file differs per machine.
_NCCL_ENV: tuple[tuple[str, str], ...] = (
    ("NCCL_NET", "gIB"),
    # Bootstrap / Gloo / TensorPipe over the primary NIC; data over the eight RDMA NICs.
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("GLOO_SOCKET_IFNAME", "eth0"),
    ("TP_SOCKET_IFNAME", "eth0"),
    ("NCCL_CROSS_NIC", "0"),
    ("NCCL_NET_GDR_LEVEL", "PIX"),
    # RoCE v2 GID of GCP's RDMA NICs (NeMo RL worker env, reference 3.6).
    ("NCCL_IB_GID_INDEX", "3"),
    ("NCCL_P2P_NET_CHUNKSIZE", "131072"),
    ("NCCL_NVLS_CHUNKSIZE", "524288"),
    ("NCCL_IB_ADAPTIVE_ROUTING", "1"),
    ("NCCL_IB_QPS_PER_CONNECTION", "4"),
    ("NCCL_IB_TC", "52"),
    ("NCCL_IB_FIFO_TC", "84"),
    # The installer copies the gIB libraries here; the GPU driver's libraries live here too.
    ("LD_LIBRARY_PATH", f"{NVIDIA_MOUNT_PATH}/lib64"),
)


# Where the framework's missing packages are installed (an emptyDir shared by the init
# container and the Ray container) and put on the Python path of every Ray process.
PACKAGES_VOLUME = "python-packages"
PACKAGES_PATH = "/opt/rl-on-gke/site-packages"
INSTALL_CONTAINER = "install-python-packages"
# The init container's own requests = limits, so the head keeps Guaranteed QoS (every
# container, init ones included, must have equal requests and limits).
_INSTALL_RESOURCES = {"cpu": "1", "memory": "1Gi"}


def install_command(framework: FrameworkSpec) -> list[str]:
    """The init container's command: pip installs the pinned packages, hash-checked, no deps.

    The image already carries their dependencies (for veRL: Dockerfile.stable.vllm installs
    veRL and uninstalls only veRL), so `--no-deps` keeps the image's torch/vLLM/Ray untouched.
    Pods reach PyPI through the VPC's Cloud NAT (components/network.py); a cluster without
    egress must mirror these wheels and set PIP_INDEX_URL in the pod template.
    """
    lines = " ".join(shlex.quote(line) for line in framework.install)
    script = (
        f"printf '%s\\n' {lines} > /tmp/requirements.txt && "
        "python3 -m pip install --no-deps --no-cache-dir --only-binary=:all: --require-hashes "
        f"--target {PACKAGES_PATH} -r /tmp/requirements.txt"
    )
    return ["/bin/sh", "-c", script]


def nccl_env(machine: MachineSpec) -> list[dict[str, str]]:
    env = [{"name": k, "value": v} for k, v in _NCCL_ENV]
    env.append({"name": "NCCL_TUNER_CONFIG_PATH", "value": machine.nccl_tuner_config})
    return env


@dataclass(frozen=True)
class RayClusterInputs:
    """Everything the RayCluster manifest depends on, as plain values."""

    name: str
    namespace: str
    framework: FrameworkSpec
    machine: MachineSpec
    worker_replicas: int
    head_cpu: int
    head_memory_gib: int
    system_pool_name: str
    service_account: str
    lustre_claim: str
    head_priority_class: str
    # secretKeyRef env vars from identity.token_env; empty when no token is configured.
    token_env: Sequence[dict[str, Any]] = field(default_factory=tuple)

    @classmethod
    def for_stack(
        cls,
        config: StackConfig,
        names: K8sNames,
        *,
        system_pool_name: str,
        token_env: Sequence[dict[str, Any]] = (),
    ) -> RayClusterInputs:
        return cls(
            name=names.ray_cluster,
            namespace=names.namespace,
            framework=FRAMEWORKS[config.ray.framework],
            machine=config.gpu.machine,
            worker_replicas=config.gpu.node_count,
            head_cpu=config.ray.head_cpu,
            head_memory_gib=config.ray.head_memory_gib,
            system_pool_name=system_pool_name,
            service_account=names.service_account,
            lustre_claim=names.lustre_pvc,
            head_priority_class=names.head_priority_class,
            token_env=tuple(token_env),
        )


def _lustre_volume(claim: str) -> dict[str, Any]:
    return {"name": "lustre", "persistentVolumeClaim": {"claimName": claim}}


def _shm_volume(size_gib: int) -> dict[str, Any]:
    # Ray's object store lives in /dev/shm; a container's default is 64 MiB. A Memory emptyDir
    # counts against the container's memory limit, so it is sized, not unbounded.
    return {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{size_gib}Gi"}}


def _common_env(inputs: RayClusterInputs) -> list[dict[str, Any]]:
    # Model downloads land on shared Lustre once, not on every node's boot disk.
    env = [{"name": HF_HOME_ENV, "value": HF_HOME_PATH}, *inputs.token_env]
    if inputs.framework.install:
        # Ray starts every worker process with the container's environment, so the job driver
        # and all actors import the installed packages (`python3 -m verl.trainer.main_ppo`).
        env.append({"name": "PYTHONPATH", "value": PACKAGES_PATH})
    return env


def _common_mounts(inputs: RayClusterInputs) -> list[dict[str, Any]]:
    mounts = [
        {"name": "lustre", "mountPath": LUSTRE_MOUNT_PATH},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    if inputs.framework.install:
        mounts.append({"name": PACKAGES_VOLUME, "mountPath": PACKAGES_PATH, "readOnly": True})
    return mounts


def _install_parts(inputs: RayClusterInputs) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(initContainers, volumes) that put the framework's missing packages in the pod, or none.

    Installed per pod at start rather than once on Lustre: a pod never depends on a shared
    directory another pod may be rewriting, and a restarted pod gets the same pinned bytes.
    """
    if not inputs.framework.install:
        return [], []
    init = {
        "name": INSTALL_CONTAINER,
        "image": inputs.framework.image_ref,
        "command": install_command(inputs.framework),
        "resources": {"requests": dict(_INSTALL_RESOURCES), "limits": dict(_INSTALL_RESOURCES)},
        "volumeMounts": [{"name": PACKAGES_VOLUME, "mountPath": PACKAGES_PATH}],
    }
    # veRL 0.6.0's wheel is under 1 MB; the limit only stops a runaway install filling the disk.
    volume = {"name": PACKAGES_VOLUME, "emptyDir": {"sizeLimit": "1Gi"}}
    return [init], [volume]


def head_group_spec(inputs: RayClusterInputs) -> dict[str, Any]:
    resources = {"cpu": str(inputs.head_cpu), "memory": f"{inputs.head_memory_gib}Gi"}
    init_containers, install_volumes = _install_parts(inputs)
    spec: dict[str, Any] = {
        # The dashboard / Jobs API listens on all pod addresses, but the Service stays inside the
        # cluster: users reach it with `kubectl port-forward`, never a load balancer.
        "serviceType": "ClusterIP",
        # num-cpus 0: Ray schedules no task or actor on the head, so training never competes
        # with the GCS for it (and never lands on the CPU pool).
        "rayStartParams": {"num-cpus": "0", "dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {
                # The cluster autoscaler must never drain the head's node to save a CPU node.
                "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
            },
            "spec": {
                "serviceAccountName": inputs.service_account,
                # The on-demand system pool: only workers ride spot (ARCHITECTURE principles).
                "nodeSelector": {NODE_POOL_LABEL: inputs.system_pool_name},
                "priorityClassName": inputs.head_priority_class,
                "containers": [
                    {
                        "name": HEAD_CONTAINER,
                        "image": inputs.framework.image_ref,
                        "ports": [{"name": n, "containerPort": p} for n, p in HEAD_PORTS],
                        # requests = limits: Guaranteed QoS, the last class evicted under pressure.
                        "resources": {"requests": dict(resources), "limits": dict(resources)},
                        "env": _common_env(inputs),
                        "volumeMounts": _common_mounts(inputs),
                    }
                ],
                "volumes": [
                    _lustre_volume(inputs.lustre_claim),
                    # A quarter of the head's memory for job drivers' objects [our choice].
                    _shm_volume(max(1, inputs.head_memory_gib // 4)),
                    *install_volumes,
                ],
            },
        },
    }
    if init_containers:
        spec["template"]["spec"]["initContainers"] = init_containers
    return spec


def worker_group_spec(inputs: RayClusterInputs) -> dict[str, Any]:
    machine = inputs.machine
    init_containers, install_volumes = _install_parts(inputs)
    resources = {
        "cpu": str(machine.worker_cpu),
        "memory": f"{machine.worker_memory_gib}Gi",
        GPU_RESOURCE: str(machine.gpus_per_node),
    }
    spec: dict[str, Any] = {
        "groupName": WORKER_GROUP,
        # Fixed size, as in every reference cluster: the GPU pool is static and a training run
        # is sized to it; the autoscaler would only add pods that cannot schedule.
        "replicas": inputs.worker_replicas,
        "minReplicas": inputs.worker_replicas,
        "maxReplicas": inputs.worker_replicas,
        "numOfHosts": 1,
        "rayStartParams": {},
        "template": {
            "metadata": {"annotations": pod_network_annotations()},
            "spec": {
                "serviceAccountName": inputs.service_account,
                "nodeSelector": {ACCELERATOR_LABEL: machine.accelerator_type},
                "tolerations": [
                    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
                    # GKE taints a node it is about to terminate (spot preemption, repair); the
                    # NeMo RL chart tolerates it (reference 3.6) so the worker runs through the
                    # notice instead of being evicted the moment the taint lands [our reading].
                    {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"},
                ],
                "containers": [
                    {
                        "name": WORKER_CONTAINER,
                        "image": inputs.framework.image_ref,
                        "ports": [{"name": "metrics", "containerPort": RAY_METRICS_PORT}],
                        # One pod takes every GPU (and so every RDMA NIC) of its node (reference 3.2).
                        "resources": {"requests": dict(resources), "limits": dict(resources)},
                        "env": [*_common_env(inputs), *nccl_env(machine)],
                        "volumeMounts": [
                            *_common_mounts(inputs),
                            {"name": "gib", "mountPath": GIB_MOUNT_PATH},
                            {"name": "nvidia", "mountPath": NVIDIA_MOUNT_PATH},
                        ],
                    }
                ],
                "volumes": [
                    _lustre_volume(inputs.lustre_claim),
                    _shm_volume(machine.shm_size_gib),
                    {"name": "gib", "hostPath": {"path": GIB_HOST_PATH}},
                    {"name": "nvidia", "hostPath": {"path": NVIDIA_HOST_PATH}},
                    *install_volumes,
                ],
            },
        },
    }
    if init_containers:
        spec["template"]["spec"]["initContainers"] = init_containers
    return spec


def ray_cluster_manifest(inputs: RayClusterInputs) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "RayCluster",
        "metadata": {"name": inputs.name, "namespace": inputs.namespace},
        "spec": {
            "rayVersion": inputs.framework.ray_version,
            "enableInTreeAutoscaling": False,
            "headGroupSpec": head_group_spec(inputs),
            "workerGroupSpecs": [worker_group_spec(inputs)],
        },
    }


def head_priority_class_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": HEAD_PRIORITY,
        "globalDefault": False,
        "description": "Ray head: no training pod may preempt it.",
    }


@dataclass(frozen=True)
class TrainingRayClusterArgs:
    target: KubeTarget
    inputs: RayClusterInputs
    # Everything the pods need before they can start: networks, installer, claim, KSA, Secret,
    # and the GPU node pool itself.
    depends_on: Sequence[pulumi.Resource] = ()


class TrainingRayCluster(pulumi.ComponentResource):
    ray_cluster: k8s.apiextensions.CustomResource

    def __init__(
        self, name: str, args: TrainingRayClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:TrainingRayCluster", name, None, opts)
        inputs = args.inputs
        pc = head_priority_class_manifest(inputs.head_priority_class)
        priority_class = k8s.scheduling.v1.PriorityClass(
            f"{name}-head-priority",
            metadata=pc["metadata"],
            value=pc["value"],
            global_default=pc["globalDefault"],
            description=pc["description"],
            opts=args.target.options(self),
        )
        self.ray_cluster = custom_object(
            f"{name}-raycluster",
            ray_cluster_manifest(inputs),
            args.target.options(self, depends_on=[priority_class, *args.depends_on]),
        )
        self.register_outputs({"name": inputs.name, "namespace": inputs.namespace})
