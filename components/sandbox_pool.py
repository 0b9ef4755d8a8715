"""The CPU node pool with GKE Sandbox (gVisor) that runs the code-execution service (pure args builder)."""

from __future__ import annotations

from typing import Any

import pulumi

from components.cluster import node_security
from components.k8s.sandbox import POOL_ROLE, POOL_ROLE_LABEL

SANDBOX_POOL_NAME = "code-sandbox"
DEFAULT_MACHINE_TYPE = "n2-standard-8"


def sandbox_pool_args(
    project: str,
    location: str,
    node_locations: list[str],
    cluster: pulumi.Input[str],
    service_account: pulumi.Input[str],
    node_count: int = 1,
    machine_type: str = DEFAULT_MACHINE_TYPE,
) -> dict[str, Any]:
    """Keyword args for gcp.container.NodePool."""
    if node_count < 1:
        raise ValueError(f"rewards.codeSandbox.nodeCount: {node_count} (expected at least 1)")
    return {
        "name": SANDBOX_POOL_NAME,
        "project": project,
        "cluster": cluster,
        "location": location,
        "node_locations": node_locations,
        "node_count": node_count,
        "node_config": {
            # COS_CONTAINERD (from node_security) is the image GKE Sandbox requires.
            **node_security(service_account),
            "machine_type": machine_type,
            # pulumi-gcp 10.2: `sandbox_type="gvisor"` is deprecated in favour of `type="GVISOR"`
            # (NodePoolNodeConfigSandboxConfigArgs). GKE then adds the `gvisor` RuntimeClass and
            # labels/taints the nodes sandbox.gke.io/runtime=gvisor.
            "sandbox_config": {"type": "GVISOR"},
            "labels": {POOL_ROLE_LABEL: POOL_ROLE},
        },
        "management": {"auto_repair": True, "auto_upgrade": True},
    }
