"""Address capacity of the stack's ranges against its node counts, checked before deploy.

Pure arithmetic, no Pulumi. The facts it encodes:
  - every GPU node takes one address in the gVNIC subnet and one in each of the 8 RDMA subnets,
    and every node (GPU and system) one in the main subnet (reference gcp-and-k8s.md 11);
  - GCP reserves 4 addresses in every subnet's primary range (VPC docs, "Reserved IP addresses
    in IPv4 subnets"), and the smallest subnet is a /29;
  - with GKE's default of 110 pods per node each node is given a /24 of the pods range (GKE
    "Configure maximum Pods per node": 2x the max pods, rounded up to a power of two).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

RESERVED_PER_SUBNET = 4
SMALLEST_SUBNET_PREFIX = 29
MAX_PODS_PER_NODE = 110
POD_RANGE_PER_NODE_PREFIX = 24
RDMA_SUBNET_SPLIT_BITS = 3  # 8 subnets
# What GKE keeps of a node for itself (GKE "Plan GKE Standard node sizes", allocatable resources):
# CPU 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above 4; memory 25% of the
# first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128, plus a
# 100 MiB eviction threshold.
_CPU_RESERVED = ((1, 0.06), (1, 0.01), (2, 0.005), (float("inf"), 0.0025))
_MEMORY_RESERVED_GIB = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (float("inf"), 0.02))
_EVICTION_GIB = 100 / 1024
# GKE's own DaemonSets on every node (networking, logging, metrics, CSI): an allowance, not a
# documented figure, so a pod that fits on paper also fits on a real node.
DAEMON_CPU = 0.5
DAEMON_MEMORY_GIB = 1.0


def nodes_in_subnet(prefixlen: int) -> int:
    addresses: int = 2 ** (32 - prefixlen)
    return addresses - RESERVED_PER_SUBNET


def smallest_subnet_prefix(nodes: int) -> int:
    """The longest prefix (smallest subnet) holding `nodes` addresses after GCP's reserved four."""
    bits = max(3, math.ceil(math.log2(nodes + RESERVED_PER_SUBNET)))
    return min(SMALLEST_SUBNET_PREFIX, 32 - bits)


def smallest_pods_prefix(nodes: int) -> int:
    per_node = 2 ** (32 - POD_RANGE_PER_NODE_PREFIX)
    return 32 - math.ceil(math.log2(max(1, nodes) * per_node))


def _reserved(amount: float, tiers: tuple[tuple[float, float], ...]) -> float:
    reserved, left = 0.0, amount
    for size, share in tiers:
        step = min(left, size)
        reserved += step * share
        left -= step
        if left <= 0:
            break
    return reserved


def executor_pods_per_node(
    vcpus: int, memory_gb: int, pod_cpu: float, pod_memory_gib: float
) -> int:
    """How many pods of this size one node holds after GKE's reservations and its DaemonSets."""
    memory_gib = memory_gb * 1000**3 / 1024**3
    cpu = vcpus - _reserved(vcpus, _CPU_RESERVED) - DAEMON_CPU
    memory = (
        memory_gib - _reserved(memory_gib, _MEMORY_RESERVED_GIB) - _EVICTION_GIB - DAEMON_MEMORY_GIB
    )
    return max(0, min(math.floor(cpu / pod_cpu), math.floor(memory / pod_memory_gib)))


@dataclass(frozen=True)
class CapacityProblem:
    field: str  # dotted snake_case path inside StackConfig, e.g. "network.rdma_cidr"
    value: str
    allowed: str


def capacity_problems(
    *,
    gpu_nodes: int,
    system_nodes: int,
    main_subnet_cidr: str,
    pods_cidr: str,
    gvnic_subnet_cidr: str,
    rdma_cidr: str,
    sandbox_nodes: int = 0,
) -> list[CapacityProblem]:
    problems: list[CapacityProblem] = []
    gpu_key = "rl-on-gke:gpu.nodeCount"

    def subnet(field: str, cidr: str, nodes: int, who: str, split_bits: int = 0) -> None:
        prefix = ipaddress.IPv4Network(cidr).prefixlen + split_bits
        fits = nodes_in_subnet(prefix)
        if nodes > fits:
            need = smallest_subnet_prefix(nodes) - split_bits
            each = f"each of its 8 subnets (/{prefix})" if split_bits else f"a /{prefix}"
            problems.append(
                CapacityProblem(
                    field,
                    cidr,
                    f"{each} holds {fits} nodes (GCP reserves {RESERVED_PER_SUBNET} addresses per subnet) "
                    f"but {who}; use a /{need} or larger",
                )
            )

    subnet("network.gvnic_subnet_cidr", gvnic_subnet_cidr, gpu_nodes, f"{gpu_key} is {gpu_nodes}")
    subnet(
        "network.rdma_cidr",
        rdma_cidr,
        gpu_nodes,
        f"{gpu_key} is {gpu_nodes}",
        split_bits=RDMA_SUBNET_SPLIT_BITS,
    )
    total = gpu_nodes + system_nodes + sandbox_nodes
    # The code-sandbox pool's nodes take main-subnet and pod-range addresses too, when enabled.
    sandbox = " + rl-on-gke:rewards.codeSandbox.nodeCount" if sandbox_nodes else ""
    both = f"{gpu_key} + rl-on-gke:cluster.systemNodeCount{sandbox} is {total}"
    subnet("network.main_subnet_cidr", main_subnet_cidr, total, both)
    pods_prefix = ipaddress.IPv4Network(pods_cidr).prefixlen
    pod_nodes = (
        2 ** (POD_RANGE_PER_NODE_PREFIX - pods_prefix)
        if pods_prefix <= POD_RANGE_PER_NODE_PREFIX
        else 0
    )
    if total > pod_nodes:
        problems.append(
            CapacityProblem(
                "network.pods_cidr",
                pods_cidr,
                f"gives {pod_nodes} nodes a /{POD_RANGE_PER_NODE_PREFIX} each ({MAX_PODS_PER_NODE} pods per "
                f"node) but {both}; use a /{smallest_pods_prefix(total)} or larger",
            )
        )
    return problems
