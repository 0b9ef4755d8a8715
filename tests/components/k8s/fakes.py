"""Fake inputs for the Kubernetes layer: stand-ins for what network/lustre/cluster/gpu_pool build."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig
from components.gcp.network import GpuNics
from components.k8s.layer import GkeFoundation, KubernetesLayer, KubernetesLayerArgs
from tools.render import Rendering, render_with

HF_TOKEN = "hf_FAKE-token-1234567890"
WANDB_KEY = "wandb-FAKE-key-0987654321"
SYSTEM_POOL = "rl-test-system"
LUSTRE_IP = "10.16.0.2"
GVNIC_NET, GVNIC_SUB = "rl-test-gvnic-net", "rl-test-gvnic-sub"
RDMA_NET = "rl-test-rdma-net"
RDMA_SUBS = [f"rl-test-rdma-sub-{i}" for i in range(8)]


@dataclass
class LayerRun:
    rendering: Rendering
    layer: dict[str, KubernetesLayer] = field(default_factory=dict)

    @property
    def component(self) -> KubernetesLayer:
        return self.layer["layer"]


CODE_SANDBOX_TOKEN = "sandbox-token-canary-0123456789abcdef"


def render_layer(
    config: StackConfig,
    *,
    hf_token: str | None = HF_TOKEN,
    wandb_key: str | None = None,
    rdma_subnets: list[str] | None = None,
    code_sandbox_pool: bool | None = None,
    sandbox_token: str | None = CODE_SANDBOX_TOKEN,
) -> LayerRun:
    """Build a KubernetesLayer on a mock GKE cluster and GPU pool; record every registration."""
    run_layer: dict[str, KubernetesLayer] = {}

    def build() -> None:
        cluster = gcp.container.Cluster("cluster", name=config.cluster_name, location=config.region)
        gpu_pool = gcp.container.NodePool("gpu-pool", cluster=cluster.name, location=config.region)
        # A gVisor pool when the config enables the sandbox, unless the test says otherwise.
        with_pool = (
            config.rewards.code_sandbox.enabled if code_sandbox_pool is None else code_sandbox_pool
        )
        sandbox_pool = (
            gcp.container.NodePool(
                "code-sandbox-pool", cluster=cluster.name, location=config.region
            )
            if with_pool
            else None
        )
        tokens = {
            "HF_TOKEN": hf_token,
            "WANDB_API_KEY": wandb_key,
            # the code-execution service's token, which a stack with the sandbox must set
            "CODE_SANDBOX_TOKEN": sandbox_token if config.rewards.code_sandbox.enabled else None,
        }
        secret_env = {env: pulumi.Output.secret(v) for env, v in tokens.items() if v is not None}
        run_layer["layer"] = KubernetesLayer(
            "k8s",
            KubernetesLayerArgs.for_stack(
                config,
                secret_env=secret_env,
                gke=GkeFoundation(
                    kubeconfig=pulumi.Output.secret("apiVersion: v1\nkind: Config\n"),
                    cluster=cluster,
                    gpu_pool=gpu_pool,
                    system_pool_name=SYSTEM_POOL,
                    # Outputs, as the real network / lustre components hand them over.
                    nics=GpuNics(
                        gvnic_network=pulumi.Output.from_input(GVNIC_NET),
                        gvnic_subnet=pulumi.Output.from_input(GVNIC_SUB),
                        rdma_network=pulumi.Output.from_input(RDMA_NET),
                        rdma_subnets=tuple(
                            pulumi.Output.from_input(s)
                            for s in (RDMA_SUBS if rdma_subnets is None else rdma_subnets)
                        ),
                    ),
                    lustre_instance_id=pulumi.Output.from_input(config.lustre_instance_id),
                    lustre_mount_point=pulumi.Output.from_input(
                        f"{LUSTRE_IP}@tcp:/{config.lustre.filesystem}"
                    ),
                    code_sandbox_pool=sandbox_pool,
                ),
            ),
        )

    rendering = render_with(build, {})
    return LayerRun(rendering=rendering, layer=run_layer)
