"""The deterministic names of every Kubernetes object (and the training GSA) of one stack.

pulumi-kubernetes appends a random suffix when `metadata.name` is unset; the jobs CLI and the
stack outputs must find these objects by name, so every builder takes its name from here.
Pure: no Pulumi import, so `jobs` can share it.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.config import StackConfig


def head_service_name(ray_cluster_name: str) -> str:
    """The Service KubeRay creates for the head (`<raycluster>-head-svc`, kuberay utils.GenerateHeadServiceName)."""
    return f"{ray_cluster_name}-head-svc"


@dataclass(frozen=True)
class K8sNames:
    namespace: str
    ray_cluster: str
    service_account: str
    # GCP account ids are 6-30 chars; name_prefix is at most 20, so "<prefix>-training" fits.
    gsa_account_id: str
    token_secret: str
    lustre_pv: str
    lustre_pvc: str
    pod_monitoring: str
    head_priority_class: str

    @property
    def head_service(self) -> str:
        return head_service_name(self.ray_cluster)

    @classmethod
    def for_stack(cls, config: StackConfig) -> K8sNames:
        prefix = config.name_prefix
        return cls(
            namespace=config.ray.namespace,
            ray_cluster=f"{prefix}-ray",
            service_account=f"{prefix}-training",
            gsa_account_id=f"{prefix}-training",
            token_secret=f"{prefix}-tokens",
            # Cluster-scoped, so the prefix keeps two stacks' volumes apart in one cluster.
            lustre_pv=f"{prefix}-lustre-pv",
            lustre_pvc=f"{prefix}-lustre-pvc",
            pod_monitoring=f"{prefix}-ray",
            head_priority_class=f"{prefix}-ray-head",
        )
