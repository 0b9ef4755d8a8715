"""The deterministic names of every Kubernetes object (and the training GSA) of one stack.

pulumi-kubernetes appends a random suffix when `metadata.name` is unset; the jobs CLI and the
stack outputs must find these objects by name, so every builder takes its name from here.
Pure: no Pulumi import, so `jobs` can share it.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.config import RaySettings, StackConfig

# The namespace stacks were first deployed with: their PV keeps the name it has.
_DEFAULT_NAMESPACE = RaySettings().namespace


def lustre_pv_name(prefix: str, claim_namespace: str) -> str:
    """The Lustre PV's name, carrying its claim's namespace (the claim's name is per stack).

    A PV remembers the uid of the claim it was bound to in `spec.claimRef`; once that claim is
    deleted the PV is Released, and a new claim (a `ray.namespace` change replaces it) that asks
    for it by `volumeName` stays Pending for good (Kubernetes "Persistent Volumes", Reclaiming:
    Retain). Named from the claim, the PV is replaced along with it, so a claim that moves comes
    with a fresh, Available volume; reclaim policy Retain leaves the Lustre instance untouched.
    The default namespace keeps the name deployed stacks already have (no replacement for them).
    """
    base = f"{prefix}-lustre-pv"
    return base if claim_namespace == _DEFAULT_NAMESPACE else f"{base}-{claim_namespace}"


def head_service_name(ray_cluster_name: str) -> str:
    """The Service KubeRay creates for the head (`<raycluster>-head-svc`, kuberay utils.GenerateHeadServiceName)."""
    return f"{ray_cluster_name}-head-svc"


@dataclass(frozen=True)
class K8sNames:
    namespace: str
    ray_cluster: str
    service_account: str
    # The GPU workers' KSA: the same Google SA, none of the head's autoscaler rights (identity.py).
    worker_service_account: str
    # GCP account ids are 6-30 chars; name_prefix is at most 20, so "<prefix>-training" fits.
    gsa_account_id: str
    token_secret: str
    lustre_pv: str
    lustre_pvc: str
    pod_monitoring: str
    head_priority_class: str
    # Ray's Metrics tab (components/k8s/grafana.py): Grafana, the Managed Prometheus query
    # frontend and its Google SA ("<prefix>-mquery": at most 27 of GCP's 30 characters).
    grafana: str = ""
    metrics_frontend: str = ""
    metrics_gsa_account_id: str = ""

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
            worker_service_account=f"{prefix}-ray-worker",
            gsa_account_id=f"{prefix}-training",
            token_secret=f"{prefix}-tokens",
            # Cluster-scoped, so the prefix keeps two stacks' volumes apart in one cluster.
            lustre_pv=lustre_pv_name(prefix, config.ray.namespace),
            lustre_pvc=f"{prefix}-lustre-pvc",
            pod_monitoring=f"{prefix}-ray",
            head_priority_class=f"{prefix}-ray-head",
            grafana=f"{prefix}-grafana",
            metrics_frontend=f"{prefix}-prom-frontend",
            metrics_gsa_account_id=f"{prefix}-mquery",
        )
