"""The CPU node pool with GKE Sandbox (gVisor) that runs the code-execution service: args and component."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig
from components.contract import CODE_SANDBOX, NODE_ROLE_LABEL
from components.gcp.cluster import IN_PLACE_UPGRADE, PoolPlace, node_pool_args, node_security
from components.gcp.image_streaming import streaming_node_config
from components.gcp.placement import location
from components.rewards_config import CodeSandboxSettings

SANDBOX_POOL_NAME = CODE_SANDBOX


def sandbox_pool_args(
    project: str,
    location: str,
    node_locations: list[str],
    cluster: pulumi.Input[str],
    service_account: pulumi.Input[str],
    node_count: int,
    machine_type: str,
) -> dict[str, Any]:
    """Keyword args for gcp.container.NodePool."""
    if node_count < 1:
        raise ValueError(f"rewards.codeSandbox.nodeCount: {node_count} (expected at least 1)")
    return node_pool_args(
        PoolPlace(SANDBOX_POOL_NAME, project, cluster, location, node_locations),
        node_count=node_count,
        node_config={
            # COS_CONTAINERD (from node_security) is the image GKE Sandbox requires.
            **node_security(service_account),
            # The executor image streams from Artifact Registry (image_streaming.py).
            **streaming_node_config(project),
            "machine_type": machine_type,
            # pulumi-gcp 10.2: `sandbox_type="gvisor"` is deprecated in favour of `type="GVISOR"`
            # (NodePoolNodeConfigSandboxConfigArgs). GKE then adds the `gvisor` RuntimeClass and
            # labels/taints the nodes sandbox.gke.io/runtime=gvisor.
            "sandbox_config": {"type": "GVISOR"},
            "labels": {NODE_ROLE_LABEL: CODE_SANDBOX},
            # As the system pool: never consume a reservation meant for something else.
            "reservation_affinity": {"consume_reservation_type": "NO_RESERVATION"},
        },
        # As the GPU pool (cluster.py IN_PLACE_UPGRADE): one node at a time, in place. With the
        # default two nodes of one executor each, the other node keeps serving the reward.
        upgrade_settings=IN_PLACE_UPGRADE,
    )


@dataclass(frozen=True)
class SandboxNodePoolArgs:
    """What the gVisor pool reads of the stack (`rewards.codeSandbox.*` and where)."""

    project: str
    region: str
    zone: str
    sandbox: CodeSandboxSettings
    cluster: gcp.container.Cluster
    service_account: pulumi.Input[str]

    @classmethod
    def for_stack(
        cls, config: StackConfig, cluster: gcp.container.Cluster, service_account: pulumi.Input[str]
    ) -> SandboxNodePoolArgs:
        return cls(
            **location(config),
            sandbox=config.rewards.code_sandbox,
            cluster=cluster,
            service_account=service_account,
        )


class SandboxNodePool(pulumi.ComponentResource):
    """The gVisor CPU pool, only registered when rewards.codeSandbox.enabled (__main__.py)."""

    node_pool: gcp.container.NodePool

    def __init__(
        self, name: str, args: SandboxNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:SandboxNodePool", name, None, opts)
        config, sandbox = args, args.sandbox
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            **sandbox_pool_args(
                config.project,
                config.region,
                [config.zone],
                args.cluster.id,
                args.service_account,
                node_count=sandbox.node_count,
                machine_type=sandbox.machine_type,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"poolName": self.node_pool.name, "nodeCount": sandbox.node_count})
