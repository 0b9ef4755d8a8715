"""The RayCluster (`ray.io/v1`): an unpreemptible CPU head and one GPU worker group, fixed or autoscaled.

Shape from reference 3.6 (kubernetes-engine-samples verl / NeMo RL clusters) and 3.7 (KubeRay
v1.7.0 types). The head sits on the on-demand system pool with `num-cpus: "0"` so it only runs
the GCS, dashboard and job drivers: losing it loses the whole cluster (ray#39787, kuberay#2153),
so nothing that can be preempted or starve it may land there.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalogue import (
    FRAMEWORKS,
    RAY_DASHBOARD_PORT,
    RAY_METRICS_PORT,
    FrameworkSpec,
    MachineSpec,
)
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
    RUNS_ROOT,
)
from components.k8s.names import K8sNames
from components.k8s.networks import pod_network_annotations
from components.k8s.provider import KubeTarget, custom_object, typed_object

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

# gIB's own NCCL settings (NCCL_NET=gIB, GID index, chunk sizes, traffic classes...) come from
# the plugin's script, sourced at worker start rather than copied here: Google's A4 / A3 Ultra
# NCCL pages say its values are "expected to change with future NCCL/gIB releases", and the
# NeMo RL chart and container-engine-accelerators gpudirect-rdma/nccl-test-a4.yaml source it
# too (reference gcp-and-k8s.md 11). The installer DaemonSet (nccl.py) puts it on every GPU node.
GIB_NCCL_ENV_SCRIPT = f"{GIB_MOUNT_PATH}/scripts/set_nccl_env.sh"
# KubeRay then runs only our command and hands us its generated `ray start` in
# $KUBERAY_GEN_RAY_START_CMD (kuberay utils.RayOverwriteContainerCmdAnnotationKey).
OVERWRITE_CONTAINER_CMD_ANNOTATION = "ray.io/overwrite-container-cmd"

# Process environment, not NCCL tuning: the libraries the installer copies (gIB's NCCL and the
# GPU driver's), and Gloo / TensorPipe bootstrap on the pod's primary NIC (eth0; the RDMA NICs
# carry only NCCL data).
_WORKER_ENV: tuple[tuple[str, str], ...] = (
    ("LD_LIBRARY_PATH", f"{NVIDIA_MOUNT_PATH}/lib64"),
    ("GLOO_SOCKET_IFNAME", "eth0"),
    ("TP_SOCKET_IFNAME", "eth0"),
)

# Scratch for Ray's /tmp/ray (session logs, spilled objects) on the head: it sits on the system
# node's 200 GB boot disk (cluster.py) beside the OS and the framework image, and holds only the
# GCS / dashboard / job-driver logs and spills of its small object store (a quarter of its
# memory, 8 GiB by default) [our sizing].
HEAD_SCRATCH_GIB = 50
RAY_SCRATCH_PATH = "/tmp/ray"


def nccl_overrides(machine: MachineSpec) -> dict[str, str]:
    """What the program sets on top of gIB's script, exported after sourcing it."""
    return {
        # Pod NIC naming: bootstrap on eth0 (networks.py pod_interfaces), which the script, written
        # for the VM's own interface names, cannot know. Google's A4 examples likewise export
        # NCCL_SOCKET_IFNAME after sourcing the script.
        "NCCL_SOCKET_IFNAME": "eth0",
        # The machine's topology file (a4 vs a3u); Google's A4 examples set it after the script too.
        "NCCL_TUNER_CONFIG_PATH": machine.nccl_tuner_config,
    }


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
    Pods reach PyPI through the VPC's Cloud NAT (components/gcp/network.py); a cluster without
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
    """The worker container's env: process settings only (NCCL tuning comes from the script)."""
    return [{"name": k, "value": v} for k, v in _WORKER_ENV]


def worker_start_script(machine: MachineSpec, script: str = GIB_NCCL_ENV_SCRIPT) -> str:
    """Source gIB's NCCL env, apply our overrides, then exec KubeRay's `ray start`.

    Ray's raylet and every worker process it forks inherit this environment. Without the script
    (installer not yet run on the node) the pod fails loudly instead of running NCCL over TCP.
    """
    exports = "\n".join(f"export {k}={v}" for k, v in nccl_overrides(machine).items())
    return (
        # KubeRay's own default command raises the open-files limit the same way.
        "ulimit -n 65536\n"
        f"if [ ! -f {script} ]; then\n"
        f"  echo 'missing {script}: the nccl-rdma-installer DaemonSet has not run on this node' >&2\n"
        "  exit 1\n"
        "fi\n"
        f"source {script}\n"
        f"{exports}\n"
        # A fresh shell keeps the quoting of JSON arguments KubeRay puts in the command.
        'exec /bin/bash -c "$KUBERAY_GEN_RAY_START_CMD"\n'
    )


def _scratch_volume() -> dict[str, Any]:
    # No sizeLimit: exceeding one evicts the pod, which ends the run. The ephemeral-storage
    # request (head, static workers) instead makes the scheduler reserve the space, and under
    # disk pressure the kubelet evicts pods above their requests first.
    return {"name": "ray-scratch", "emptyDir": {}}


def worker_scratch_request(inputs: RayClusterInputs) -> dict[str, str]:
    """The worker's ephemeral-storage request: the catalogued scratch on a static pool, none on
    a pool that scales from 0.

    GKE's cluster autoscaler does not scale a pool up from 0 for a pod that requests ephemeral
    storage when the pool's ephemeral storage is on Local SSD (GKE release notes, 2021-02-05,
    quoted in kubernetes/autoscaler#1869: "scaling from 0 node pools remains unsupported for node
    pools that use ephemeral storage on local SSDs"; autoscaler#4318 taught the GCE node template
    about Local SSD for self-managed clusters and "doesn't work out of the box for GKE"). With
    no request the pod still gets the whole node's Local SSD array as its emptyDir, since one
    worker takes the node; the request only reserved what it could not be denied anyway.
    """
    if inputs.autoscale:
        return {}
    return {"ephemeral-storage": f"{inputs.machine.worker_scratch_gib}Gi"}


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
    # The workers' own KSA: KubeRay binds its autoscaler Role to the head's only.
    worker_service_account: str
    lustre_claim: str
    head_priority_class: str
    # secretKeyRef env vars from identity.token_env; empty when no token is configured.
    token_env: Sequence[dict[str, Any]] = field(default_factory=tuple)
    # gpu.scaling on-demand: Ray's autoscaler sizes the worker group between 0 and
    # worker_replicas and releases a worker idle for idle_timeout_s.
    autoscale: bool = False
    idle_timeout_s: int = 0
    # The head's env for Ray's Metrics tab (components/k8s/grafana.py `head_env`); empty: off.
    metrics_env: Sequence[dict[str, Any]] = field(default_factory=tuple)

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
            worker_service_account=names.worker_service_account,
            lustre_claim=names.lustre_pvc,
            head_priority_class=names.head_priority_class,
            token_env=tuple(token_env),
            autoscale=config.gpu.scales_on_demand,
            idle_timeout_s=config.gpu.idle_minutes * 60,
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
    mounts: list[dict[str, Any]] = [
        {"name": "lustre", "mountPath": LUSTRE_MOUNT_PATH},
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "ray-scratch", "mountPath": RAY_SCRATCH_PATH},
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


REARM_CONTAINER = "rearm"
# The re-armer is stdlib + Ray: a Python process polling Lustre and the dashboard every 10 s.
_REARM_RESOURCES = {"cpu": "250m", "memory": "512Mi"}
# Every supervisor publishes the `jobs` package it runs beside the run records
# (jobs/head/rearm_code.py `publish_code`): the framework image does not carry it, so the
# re-armer waits for the first.
REARM_CODE = f"{RUNS_ROOT}/.rearm/current"


def rearm_container(inputs: RayClusterInputs) -> dict[str, Any]:
    """The head pod's sidecar that gives supervised runs whose supervisor is gone (a head pod
    restarted by an upgrade, a repair or an OOM kill) a new one (jobs/head/rearm.py)."""
    script = (
        f"until [ -d {REARM_CODE}/jobs ]; do sleep 30; done; "
        f"export PYTHONPATH={REARM_CODE}; exec python -m jobs.head.rearm "
        f"--address http://127.0.0.1:{RAY_DASHBOARD_PORT} --runs-root {RUNS_ROOT}"
    )
    return {
        "name": REARM_CONTAINER,
        "image": inputs.framework.image_ref,
        "command": ["/bin/sh", "-c", script],
        # requests = limits: the head pod keeps Guaranteed QoS.
        "resources": {"requests": dict(_REARM_RESOURCES), "limits": dict(_REARM_RESOURCES)},
        "volumeMounts": [{"name": "lustre", "mountPath": LUSTRE_MOUNT_PATH}],
    }


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
                        # Scratch is requested only (see _scratch_volume).
                        "resources": {
                            "requests": {**resources, "ephemeral-storage": f"{HEAD_SCRATCH_GIB}Gi"},
                            "limits": dict(resources),
                        },
                        "env": [*_common_env(inputs), *inputs.metrics_env],
                        "volumeMounts": _common_mounts(inputs),
                    },
                ],
                "volumes": [
                    _lustre_volume(inputs.lustre_claim),
                    # A quarter of the head's memory for job drivers' objects [our choice].
                    _shm_volume(max(1, inputs.head_memory_gib // 4)),
                    *install_volumes,
                    _scratch_volume(),
                ],
            },
        },
    }
    # The re-armer runs as a native sidecar (an init container with restartPolicy Always, after
    # the package install it needs): the kubelet restarts it whatever the pod's restartPolicy,
    # which KubeRay sets to Never under autoscaler v2 (kuberay v1.7.0 common/pod.go L278-280), so
    # one that dies (an OOM kill, an error its loop does not catch) comes back
    # (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/, Kubernetes 1.29+).
    spec["template"]["spec"]["initContainers"] = [
        *init_containers,
        {**rearm_container(inputs), "restartPolicy": "Always"},
    ]
    return spec


def worker_counts(inputs: RayClusterInputs) -> dict[str, int]:
    """The worker group's replica fields, fixed or autoscaled.

    Fixed (gpu.scaling static): min = max = replicas = nodeCount, as in every reference cluster;
    the GPU pool is static and a run is sized to it. A parked stack (nodeCount 0) keeps 0 of
    each, which the KubeRay CRD allows (all three default to or accept 0).
    Autoscaled (gpu.scaling on-demand): 0..nodeCount and no `replicas` at all. Ray's autoscaler
    owns that field (it writes the count it wants into the RayCluster; KubeRay creates the pods);
    a `replicas` in the program's manifest would be applied again by every `pulumi up` and
    delete the workers of a running job. The CRD's default (0) sets it at creation.
    """
    if inputs.autoscale:
        return {"minReplicas": 0, "maxReplicas": inputs.worker_replicas}
    return {
        "replicas": inputs.worker_replicas,
        "minReplicas": inputs.worker_replicas,
        "maxReplicas": inputs.worker_replicas,
    }


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
        **worker_counts(inputs),
        "numOfHosts": 1,
        "rayStartParams": {},
        "template": {
            "metadata": {
                "annotations": {
                    **pod_network_annotations(),
                    OVERWRITE_CONTAINER_CMD_ANNOTATION: "true",
                }
            },
            "spec": {
                # Not the head's KSA: KubeRay binds its autoscaler Role (patch pods and the
                # RayCluster) to the head template's serviceAccountName (kuberay v1.7.0
                # utils/util.go `GetHeadGroupServiceAccountName`), and code on a worker has no
                # business resizing the cluster. Same Google SA (identity.py).
                "serviceAccountName": inputs.worker_service_account,
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
                        "command": ["/bin/bash", "-lc", "--"],
                        "args": [worker_start_script(machine)],
                        # One pod takes every GPU (and so every RDMA NIC) of its node (reference 3.2).
                        # /tmp/ray lives on the node's Local SSDs (gpu_pool.py); requested only
                        # where the pool does not scale from 0 (worker_scratch_request).
                        "resources": {
                            "requests": {**resources, **worker_scratch_request(inputs)},
                            "limits": dict(resources),
                        },
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
                    _scratch_volume(),
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


# The autoscaler sidecar KubeRay adds to the head pod. Requests = limits (KubeRay's own default
# is 500m / 512Mi, both) so the head pod keeps Guaranteed QoS.
AUTOSCALER_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def autoscaler_options(inputs: RayClusterInputs) -> dict[str, Any]:
    """`spec.autoscalerOptions` (KubeRay v1.7.0 CRD) for the in-tree Ray autoscaler, version 2.

    `version: v2` is how KubeRay turns autoscaler v2 on: the operator then sets
    RAY_enable_autoscaler_v2 on the head container itself (kuberay ray-operator/controllers/ray/
    common/pod.go `setAutoscalerV2EnvVars`), and refuses a RayCluster whose head sets that env
    var as well ("both .spec.autoscalerOptions.version and head Pod env var
    RAY_enable_autoscaler_v2 are set, please only use the former", kuberay
    ray-operator/controllers/ray/utils/validation.go `ValidateRayClusterSpec`), so the env var
    is deliberately absent here. The same validation requires restartPolicy Never or unset on
    every pod with v2, which the pod templates leave unset.
    The sidecar talks to the Kubernetes API as the head pod's service account (our Workload
    Identity KSA, which exists before the RayCluster): KubeRay binds its autoscaler Role to the
    head template's `serviceAccountName` and creates a service account only when none by that
    name exists (kuberay ray-operator/controllers/ray/utils/util.go
    `GetHeadGroupServiceAccountName`; raycluster_controller.go `reconcileAutoscalerServiceAccount`,
    `reconcileAutoscalerRoleBinding`).
    """
    return {
        "version": "v2",
        # A worker with no task, actor or object for this long is removed (gpu.idleMinutes).
        "idleTimeoutSeconds": inputs.idle_timeout_s,
        # A run asks for all its GPU nodes at once (one placement group); adding them one at a
        # time would only delay it.
        "upscalingMode": "Default",
        "resources": {
            "requests": dict(AUTOSCALER_RESOURCES),
            "limits": dict(AUTOSCALER_RESOURCES),
        },
    }


# Who owns what of the RayCluster (docs/deploy.md, "Who owns the RayCluster"). The CRD gives
# `spec.workerGroupSpecs` no x-kubernetes-list-type, so server-side apply treats the list as one
# field (kuberay v1.7.0 ray-operator/config/crd/bases/ray.io_rayclusters.yaml; SSA "Merge
# strategy"); Ray's autoscaler writes `replicas` and `workersToDelete` inside it with a JSON patch
# (Ray 2.46 autoscaler/v2/instance_manager/cloud_providers/kuberay/cloud_provider.py
# `_submit_scale_request`), which moves the whole list to its manager. Pulumi's next apply of a
# changed RayCluster would then fail with a conflict; forced (pulumi-kubernetes
# provider/pkg/await/await.go `patchForce`, the `pulumi.com/patchForce` annotation) it takes the
# list back and `replicas` returns to the CRD default, 0.
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
# KubeRay v1.7.0 recreates every pod when the spec's hash changes under `upgradeStrategy.type:
# Recreate` (raycluster_controller.go L1462-1500 `shouldRecreatePodsForUpgrade`); the hash leaves
# out the replica counts, workersToDelete and tolerations (utils/util.go L645-667
# `GenerateHashWithoutReplicasAndWorkersToDelete`). Without it a changed image, env or
# autoscaler setting never reaches the running head. Two limits, both in docs/deploy.md: the CRD
# has the field only from KubeRay v1.6.0 (the CRD gate refuses an older add-on), and a new KubeRay
# version's first reconcile (a GKE upgrade) restamps the head pod with the spec's hash as it is
# then and recreates nothing, so a change applied before that reconcile is lost (same function,
# L1481-1491); the hash is compared on every reconcile, so later changes restart Ray.
UPGRADE_STRATEGY = {"type": "Recreate"}
# On an autoscaled stack every change of the manifest (a nodeCount change included) also changes
# this head-template annotation, which the hash covers: the forced apply that resets `replicas`
# always comes with a new head and new workers, never under a live autoscaler that counts
# running workers against 0 (its `assert num_workers_dict[...] >= 0`, autoscaler/v2/instance_manager/
# cloud_providers/kuberay/cloud_provider.py L253 in Ray 2.46.0, L257 in 2.48.0).
SPEC_HASH_ANNOTATION = "rl-on-gke/spec-hash"


def spec_hash(manifest: dict[str, Any]) -> str:
    """A short digest of the whole manifest as the program renders it."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ray_cluster_manifest(inputs: RayClusterInputs) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "rayVersion": inputs.framework.ray_version,
        "enableInTreeAutoscaling": inputs.autoscale,
        "upgradeStrategy": dict(UPGRADE_STRATEGY),
    }
    if inputs.autoscale:
        spec["autoscalerOptions"] = autoscaler_options(inputs)
    spec["headGroupSpec"] = head_group_spec(inputs)
    spec["workerGroupSpecs"] = [worker_group_spec(inputs)]
    manifest: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "RayCluster",
        "metadata": {
            "name": inputs.name,
            "namespace": inputs.namespace,
            "annotations": {PATCH_FORCE_ANNOTATION: "true"},
        },
        "spec": spec,
    }
    if inputs.autoscale:
        digest = spec_hash(manifest)
        spec["headGroupSpec"]["template"]["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = digest
    return manifest


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
        priority_class = typed_object(
            k8s.scheduling.v1.PriorityClass, f"{name}-head-priority", pc, args.target.options(self)
        )
        self.ray_cluster = custom_object(
            f"{name}-raycluster",
            ray_cluster_manifest(inputs),
            args.target.options(self, depends_on=[priority_class, *args.depends_on]),
        )
        self.register_outputs({"name": inputs.name, "namespace": inputs.namespace})
