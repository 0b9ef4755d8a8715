"""The code-execution sandbox service on the cluster: Deployment, Service and NetworkPolicy (pure builders).

The executor (jobs/rewards/service.py) runs model-written C++ for the code-contests reward, so its
pods get nothing worth stealing and no way out:
- GKE Sandbox: `runtimeClassName: gvisor` on a node pool created with sandbox_config GVISOR
  (components/gcp/sandbox_pool.py). GKE labels and taints such nodes `sandbox.gke.io/runtime=gvisor`;
  we select and tolerate that and our own pool label, so the pods land only on that pool.
- No credentials: no service-account token mounted, no Secret env or volume, no service links.
- A NetworkPolicy with `Egress` in policyTypes and no egress rule (all egress denied) and ingress
  only from this stack's Ray pods on the service port.
- Non-root, no privilege escalation, all capabilities dropped, read-only root filesystem; the
  executor's work dirs live in a size-capped emptyDir at /tmp. (In this mode the executor runs in
  its "unprivileged" isolation: rlimits, process-group kill, private dirs; network and filesystem
  containment come from the pod itself.)
Code ships in a ConfigMap of the jobs/rewards sources (the caller reads them), so any image with
Python 3.11+, pydantic 2, g++ and util-linux serves.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from components.contract import (
    CODE_SANDBOX,
    CODE_SANDBOX_TOKEN_ENV,
    GVISOR_RUNTIME_CLASS,
    NODE_ROLE_LABEL,
    RAY_CLUSTER_LABEL,
)

GVISOR_NODE_LABEL = "sandbox.gke.io/runtime"
POOL_ROLE_LABEL = NODE_ROLE_LABEL
POOL_ROLE = CODE_SANDBOX
APP_LABEL = "app.kubernetes.io/name"
CODE_DIR = "/opt/rl-sandbox"
RUN_SIZE = "16Mi"  # /run: the uid lease lock files (empty files, one per pool uid)
CODE_DIGEST_ANNOTATION = "rl-on-gke/code-sha256"
PORT = 8080
# The files the service imports (python -m jobs.rewards.service) and the box init it compiles at
# start; ConfigMap keys cannot hold "/".
SOURCE_FILES = (
    "jobs/__init__.py",
    "jobs/rewards/__init__.py",
    "jobs/rewards/sandbox.py",
    "jobs/rewards/judge.py",
    "jobs/rewards/compile_cache.py",
    "jobs/rewards/compile_gate.py",
    "jobs/rewards/service.py",
    "jobs/rewards/box.py",
    "jobs/rewards/uids.py",
    "jobs/rewards/seccomp.py",
    "jobs/rewards/budget.py",
    "jobs/rewards/state_dir.py",
    "jobs/rewards/boxinit.c",
)
# The token the Ray pods send and the service checks: one key of the stack's token Secret.
TOKEN_ENV = CODE_SANDBOX_TOKEN_ENV
# tini (Debian package, images/code-sandbox/Dockerfile) is PID 1: it reaps whatever is orphaned in
# the pod and forwards SIGTERM, so the service is never PID 1 and never collects zombies.
INIT = ("/usr/bin/tini", "--")
# Inside gVisor the executor is root and builds a bwrap box per program. What each capability is
# for (capabilities(7)); gVisor implements each of them for its own sandboxed processes:
EXECUTOR_CAPABILITIES = (
    "SYS_ADMIN",  # unshare(2) of pid/mount/net/ipc/uts namespaces, mount(2)/pivot_root(2) by bwrap
    "SETUID",
    "SETGID",  # boxinit drops to a pool uid (setresuid/setresgid/setgroups)
    "SETPCAP",  # bwrap drops the bounding set of the box
    "NET_ADMIN",  # bwrap brings up the loopback of the box's own network namespace
    "KILL",  # signal processes of pool uids
    "CHOWN",
    "FOWNER",
    "DAC_OVERRIDE",  # hand the compiler's output directory to its pool uid, remove it
    "SYS_CHROOT",  # bwrap's pivot_root/chroot into the new root
)


# The service's own share of its pod's memory (Python, its threads, the request bodies it
# holds, the compiled binaries' page cache): the boxes get the rest (jobs/rewards/budget.py).
SERVICE_OWN_BYTES = 1 * 2**30
_QUANTITY = re.compile(r"^(?P<n>[0-9]+)(?P<unit>Mi|Gi)$")


def quantity_bytes(quantity: str) -> int:
    """A Kubernetes memory quantity in Mi or Gi (what this program writes) as bytes."""
    match = _QUANTITY.match(quantity)
    if match is None:
        raise ValueError(f"memory {quantity!r}: expected <N>Mi or <N>Gi, e.g. 8Gi")
    return int(match["n"]) * (2**20 if match["unit"] == "Mi" else 2**30)


def service_command(
    port: int,
    concurrency: int,
    host: str = "0.0.0.0",
    socket_timeout_s: float = 30,
    workers: int | None = None,
    memory_bytes: int | None = None,
) -> list[str]:
    """How the image starts the service (without the init); the tests start it the same way.
    In the pod, `workers` is its CPU count and `memory_bytes` its memory less SERVICE_OWN_BYTES:
    the node's CPU count, what Python sees, is not the pod's."""
    command = [
        "python3",
        "-m",
        "jobs.rewards.service",
        "--host",
        host,
        "--port",
        str(port),
        "--concurrency",
        str(concurrency),
        "--socket-timeout",
        f"{socket_timeout_s:g}",
    ]
    if workers is not None:
        command += ["--workers", str(workers)]
    if memory_bytes is not None:
        command += ["--memory-bytes", str(memory_bytes)]
    return command


def source_key(path: str) -> str:
    return path.replace("/", "__")


@dataclass(frozen=True)
class SandboxServiceInputs:
    name: str
    namespace: str
    image: str
    ray_cluster: str  # whose pods may call the service
    sources: dict[str, str]  # SOURCE_FILES path -> file text
    token_secret: str  # the Secret holding TOKEN_ENV (the training token Secret)
    replicas: int = 2
    cpu: str = "4"
    memory: str = "8Gi"
    scratch: str = "4Gi"
    concurrency: int = 4
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [p for p in SOURCE_FILES if p not in self.sources]
        if missing:
            raise ValueError(
                f"sandbox service sources: missing {missing} (expected every one of {list(SOURCE_FILES)})"
            )
        if self.replicas < 1:
            raise ValueError(f"sandbox service replicas: {self.replicas} (expected at least 1)")

    @property
    def selector(self) -> dict[str, str]:
        return {APP_LABEL: self.name}

    @property
    def code_digest(self) -> str:
        """sha256 of the shipped sources: files mounted by subPath never update in a running pod,
        so the pod template carries it and a code change rolls the Deployment."""
        h = hashlib.sha256()
        for path in SOURCE_FILES:
            h.update(path.encode() + b"\0" + self.sources[path].encode() + b"\0")
        return h.hexdigest()

    @property
    def url(self) -> str:
        """What the reward's CODE_SANDBOX_URL should be inside the cluster."""
        return f"http://{self.name}.{self.namespace}.svc.cluster.local:{PORT}"


def _meta(inputs: SandboxServiceInputs, name: str | None = None) -> dict[str, Any]:
    return {
        "name": name or inputs.name,
        "namespace": inputs.namespace,
        "labels": {**inputs.labels, **inputs.selector},
    }


def _service_object(
    inputs: SandboxServiceInputs, api_version: str, kind: str, spec: dict[str, Any]
) -> dict[str, Any]:
    """One of the sandbox service's objects: its name, namespace and labels, with this spec."""
    return {"apiVersion": api_version, "kind": kind, "metadata": _meta(inputs), "spec": spec}


def config_map_manifest(inputs: SandboxServiceInputs) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(inputs, f"{inputs.name}-code"),
        "data": {source_key(p): inputs.sources[p] for p in SOURCE_FILES},
    }


def _executor_container(inputs: SandboxServiceInputs) -> dict[str, Any]:
    resources = {"cpu": inputs.cpu, "memory": inputs.memory, "ephemeral-storage": inputs.scratch}
    container = {
        "name": "executor",
        "image": inputs.image,
        "command": [
            *INIT,
            *service_command(
                PORT,
                inputs.concurrency,
                workers=int(inputs.cpu),
                memory_bytes=quantity_bytes(inputs.memory) - SERVICE_OWN_BYTES,
            ),
        ],
        "workingDir": CODE_DIR,
        # The service token is the one secret (the service drops it from its environment at start;
        # the programs themselves get an empty environment and cannot see the service's process).
        "env": [
            {"name": "PYTHONPATH", "value": CODE_DIR},
            {"name": "TMPDIR", "value": "/tmp"},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {
                "name": TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": inputs.token_secret, "key": TOKEN_ENV}},
            },
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "http"},
            "periodSeconds": 30,
            "failureThreshold": 4,
        },
        "resources": {"requests": resources, "limits": resources},
        # Root inside gVisor (the sandbox's root, not the node's): the executor builds boxes.
        # No privileged mode, no privilege escalation (bwrap and boxinit need no setuid binary),
        # a read-only root filesystem; only the capabilities listed above.
        "securityContext": {
            "runAsNonRoot": False,
            "runAsUser": 0,
            "runAsGroup": 0,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": list(EXECUTOR_CAPABILITIES)},
        },
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/tmp"},
            # The uid leases (jobs/rewards/uids.py LEASE_DIR) are kernel-wide, so they live in
            # /run, not under TMPDIR; the root filesystem is read-only, hence this small tmpfs.
            {"name": "run", "mountPath": "/run"},
            *(
                {
                    "name": "code",
                    "mountPath": f"{CODE_DIR}/{p}",
                    "subPath": source_key(p),
                    "readOnly": True,
                }
                for p in SOURCE_FILES
            ),
        ],
    }
    return container


def deployment_manifest(inputs: SandboxServiceInputs) -> dict[str, Any]:
    container = _executor_container(inputs)
    pod_spec = {
        "runtimeClassName": GVISOR_RUNTIME_CLASS,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": {GVISOR_NODE_LABEL: "gvisor", POOL_ROLE_LABEL: POOL_ROLE},
        "tolerations": [
            {
                "key": GVISOR_NODE_LABEL,
                "operator": "Equal",
                "value": "gvisor",
                "effect": "NoSchedule",
            }
        ],
        # No seccompProfile: under gVisor the runtime's profile is not applied to the sandboxed
        # processes (the Sentry filters its own host calls); each box installs its own filter.
        "securityContext": {"runAsNonRoot": False},
        "containers": [container],
        "volumes": [
            {"name": "scratch", "emptyDir": {"sizeLimit": inputs.scratch}},
            {"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": RUN_SIZE}},
            {"name": "code", "configMap": {"name": f"{inputs.name}-code"}},
        ],
    }
    return _service_object(
        inputs,
        "apps/v1",
        "Deployment",
        {
            "replicas": inputs.replicas,
            "selector": {"matchLabels": inputs.selector},
            "template": {
                "metadata": {
                    "labels": {**inputs.labels, **inputs.selector},
                    "annotations": {CODE_DIGEST_ANNOTATION: inputs.code_digest},
                },
                "spec": pod_spec,
            },
        },
    )


def service_manifest(inputs: SandboxServiceInputs) -> dict[str, Any]:
    return _service_object(
        inputs,
        "v1",
        "Service",
        {
            "selector": inputs.selector,
            "ports": [{"name": "http", "port": PORT, "targetPort": "http"}],
        },
    )


def network_policy_manifest(inputs: SandboxServiceInputs) -> dict[str, Any]:
    return _service_object(
        inputs,
        "networking.k8s.io/v1",
        "NetworkPolicy",
        {
            "podSelector": {"matchLabels": inputs.selector},
            # Egress listed with no rule: every outbound connection is denied, DNS included.
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {
                    "from": [
                        {"podSelector": {"matchLabels": {RAY_CLUSTER_LABEL: inputs.ray_cluster}}}
                    ],
                    "ports": [{"protocol": "TCP", "port": PORT}],
                }
            ],
            "egress": [],
        },
    )


def manifests(inputs: SandboxServiceInputs) -> list[dict[str, Any]]:
    return [
        config_map_manifest(inputs),
        deployment_manifest(inputs),
        service_manifest(inputs),
        network_policy_manifest(inputs),
    ]
