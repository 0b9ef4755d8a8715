"""`CodeSandboxService`: registers the code-execution service's objects (components/k8s/sandbox.py).

Only when `rewards.codeSandbox.enabled`. The executor's sources are read from this repository at
plan time and shipped in the ConfigMap, so the pods run exactly the code the reward tests ran.
The NetworkPolicy is created before the Deployment, so no executor pod ever runs without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.config import StackConfig
from components.contract import CODE_SANDBOX
from components.k8s.provider import KubeTarget, typed_object
from components.k8s.sandbox import SOURCE_FILES, SandboxServiceInputs, manifests

REPO_ROOT = Path(__file__).resolve().parents[2]


def code_sandbox_name(config: StackConfig) -> str:
    # name_prefix is at most 20 characters, so this stays a valid DNS-1035 Service name.
    return f"{config.name_prefix}-{CODE_SANDBOX}"


def read_sources(root: Path = REPO_ROOT) -> dict[str, str]:
    return {path: (root / path).read_text() for path in SOURCE_FILES}


def service_inputs(
    config: StackConfig, ray_cluster: str, sources: dict[str, str], token_secret: str
) -> SandboxServiceInputs:
    sandbox = config.rewards.code_sandbox
    if not sandbox.enabled or sandbox.image is None:
        raise ValueError("service_inputs: rewards.codeSandbox is not enabled with an image")
    return SandboxServiceInputs(
        name=code_sandbox_name(config),
        namespace=config.ray.namespace,
        image=sandbox.image,
        ray_cluster=ray_cluster,
        sources=sources,
        token_secret=token_secret,
        replicas=sandbox.replicas,
        concurrency=sandbox.concurrency,
        labels={"app.kubernetes.io/part-of": "rl-on-gke"},
    )


@dataclass(frozen=True)
class CodeSandboxServiceArgs:
    target: KubeTarget
    inputs: SandboxServiceInputs
    namespace_resource: pulumi.Resource
    # The gVisor pool: its nodes (and GKE's `gvisor` RuntimeClass) must exist before the pods.
    node_pool: pulumi.Resource
    depends_on: Sequence[pulumi.Resource] = ()


class CodeSandboxService(pulumi.ComponentResource):
    url: str

    def __init__(
        self, name: str, args: CodeSandboxServiceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:CodeSandboxService", name, None, opts)
        config_map, deployment, service, policy = manifests(args.inputs)
        base = [args.namespace_resource, *args.depends_on]
        policy_resource = typed_object(
            k8s.networking.v1.NetworkPolicy,
            f"{name}-egress-deny",
            policy,
            args.target.options(self, depends_on=base),
        )
        code = typed_object(
            k8s.core.v1.ConfigMap,
            f"{name}-code",
            config_map,
            args.target.options(self, depends_on=base),
        )
        typed_object(
            k8s.apps.v1.Deployment,
            f"{name}-executor",
            deployment,
            args.target.options(self, depends_on=[*base, args.node_pool, code, policy_resource]),
        )
        typed_object(
            k8s.core.v1.Service,
            f"{name}-service",
            service,
            args.target.options(self, depends_on=base),
        )
        self.url = args.inputs.url
        self.register_outputs({"url": self.url})
