"""The `rewards` block of the stack config: the code-contests sandbox service, validated (pure pydantic).

`rewards.codeSandbox` is off by default; a stack that leaves it out plans exactly as before. When on,
the program adds a GKE Sandbox (gVisor) CPU pool and the executor service on it
(components/gcp/sandbox_pool.py, components/k8s/sandbox.py). Rules checked here, before any resource:
  - the machine type names its vCPUs (`<series>-<class>-<N>`) on an x86 general-purpose or
    compute-optimized series: GKE Sandbox nodes run Container-Optimized OS with containerd
    (GKE "Harden workload isolation with GKE Sandbox",
    https://cloud.google.com/kubernetes-engine/docs/how-to/sandbox-pods; node_security sets
    COS_CONTAINERD on every pool, and the system pool keeps GKE's own workloads off it), shared-core types (e2-micro, e2-small,
    e2-medium) give burst CPU that a judge of CPU time must not rely on, and the pod size below
    has to fit the node;
  - `replicas` executor pods of SANDBOX_POD_CPU / SANDBOX_POD_MEMORY_GIB each fit on `nodeCount`
    nodes after GKE's node reservations (components/capacity.py fit_per_node);
  - the image is given: it must hold Python 3.11+, pydantic 2, g++ and util-linux, because the
    executor imports pydantic (jobs/rewards/service.py) and its pods cannot reach any index
    (egress denied). images/code-sandbox/Dockerfile builds one from the catalogue's base.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, model_validator

from components.capacity import executor_pods_per_node
from components.rules import Settings, checked_by, matches, rule

# The executor pod's size (components/k8s/sandbox.py SandboxServiceInputs defaults: cpu "4",
# memory "8Gi"); capacity is checked against these.
SANDBOX_POD_CPU = 4
SANDBOX_POD_MEMORY_GIB = 8
# Compute Engine memory per vCPU by machine class for these series ("General-purpose machine
# family" / "Compute-optimized machine family" docs: standard 4 GB, highmem 8 GB, highcpu 1 GB
# per vCPU for E2, N2, N2D, N4, C3, C3D, T2D; C4/C4D standard is 3.75, rounded down here to 3).
_GB_PER_VCPU = {"standard": 3, "highmem": 8, "highcpu": 1}
_SERIES = ("e2", "n2", "n2d", "n4", "c3", "c3d", "c4", "c4d", "t2d")
_MACHINE = re.compile(r"^(?P<series>[a-z0-9]+)-(?P<kind>standard|highmem|highcpu)-(?P<vcpus>\d+)$")
# A container image reference: [registry[:port]/]path[:tag][@sha256:<64 hex>], lowercase path.
_IMAGE = re.compile(
    r"^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?(?::\d+)?/)?[a-z0-9]+(?:[._/-][a-z0-9]+)*"
    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$"
)
ImageRef = Annotated[
    str,
    matches(
        _IMAGE,
        "must be a container image reference such as "
        "us-docker.pkg.dev/PROJECT/REPO/code-sandbox:TAG (digest form preferred)",
    ),
]


def machine_shape(machine_type: str) -> tuple[int, int]:
    """(vCPUs, GB of memory) of an allowed machine type; ValueError naming what is allowed."""
    match = _MACHINE.match(machine_type)
    if not match or match["series"] not in _SERIES:
        raise ValueError(
            f"must be <series>-standard|highmem|highcpu-<vCPUs> on an x86 series GKE Sandbox runs "
            f"({', '.join(_SERIES)}), e.g. n2-standard-8; shared-core types are not allowed"
        )
    vcpus = int(match["vcpus"])
    return vcpus, vcpus * _GB_PER_VCPU[match["kind"]]


class CodeSandboxSettings(Settings):
    enabled: bool = False
    # 8 vCPUs, 32 GB: one 4-CPU / 8 GiB executor per node after GKE's reservations and daemons.
    machine_type: Annotated[str, checked_by(machine_shape)] = "n2-standard-8"
    # Two nodes with one executor each: a node upgraded in place (one at a time, cluster.py
    # IN_PLACE_UPGRADE) leaves the other serving, so the reward's retries ride it out.
    node_count: int = Field(default=2, ge=1, le=16)
    replicas: int = Field(default=2, ge=1, le=64)
    # Solutions one executor runs at once (more get 503 and the reward backs off).
    concurrency: int = Field(default=4, ge=1, le=32)
    image: ImageRef | None = None

    @model_validator(mode="after")
    def _usable_when_enabled(self) -> CodeSandboxSettings:
        if not self.enabled:
            return self
        if self.image is None:
            raise rule(
                "image",
                None,
                "required when rewards.codeSandbox.enabled is true: an image with Python 3.11+, "
                "pydantic 2, g++ and util-linux (build images/code-sandbox/Dockerfile; the pods have "
                "no network to install anything)",
            )
        vcpus, memory_gb = machine_shape(self.machine_type)
        per_node = executor_pods_per_node(vcpus, memory_gb, SANDBOX_POD_CPU, SANDBOX_POD_MEMORY_GIB)
        if per_node == 0:
            raise rule(
                "machine_type",
                self.machine_type,
                f"cannot hold one executor ({SANDBOX_POD_CPU} CPU, {SANDBOX_POD_MEMORY_GIB} GiB) after "
                "GKE's node reservations; use n2-standard-8 or larger",
            )
        if self.replicas > per_node * self.node_count:
            raise rule(
                "replicas",
                self.replicas,
                f"at most {per_node * self.node_count}: {self.node_count} node(s) "
                f"(rl-on-gke:rewards.codeSandbox.nodeCount) of {self.machine_type} hold {per_node} "
                f"executor(s) each; raise nodeCount or the machine size",
            )
        return self


class RewardsSettings(Settings):
    code_sandbox: CodeSandboxSettings = CodeSandboxSettings()
