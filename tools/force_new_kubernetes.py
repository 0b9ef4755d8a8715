"""Which changes make pulumi-kubernetes replace an object: the Kubernetes force-new table behind `tools.plan_diff`.

From provider/pkg/provider/diff.go `forceNew` at pulumi/pulumi-kubernetes 94977969d641
(2026-07-01): `metadata.name` / `metadata.namespace` for every kind, plus the kinds' immutable
fields this program sets. Custom resources (RayCluster, Network, ...) have only the metadata ones.
"""

from __future__ import annotations

from tools.force_new import ForceNew

KUBERNETES_UPSTREAM = "pulumi/pulumi-kubernetes"
KUBERNETES_COMMIT = "94977969d64112b04e19945818a7d5d5f38f631d"
_K8S_DIFF = "provider/pkg/provider/diff.go"
# Every Kubernetes kind: metadataForceNewProperties(".metadata").
KUBERNETES_METADATA = (
    ForceNew("metadata.name", "value", _K8S_DIFF, 209),
    ForceNew("metadata.namespace", "value", _K8S_DIFF, 210),
)
KUBERNETES_FORCE_NEW: dict[str, tuple[ForceNew, ...]] = {
    # Any volume source: the program sets spec.csi (the Lustre instance, its IP and filesystem).
    "kubernetes:core/v1:PersistentVolume": (ForceNew("spec.csi", "value", _K8S_DIFF, 93),),
    "kubernetes:core/v1:PersistentVolumeClaim": tuple(
        ForceNew(path, "value", _K8S_DIFF, 111)
        for path in (
            "spec.accessModes",
            "spec.selector",
            "spec.storageClassName",
            "spec.volumeName",
        )
    ),
    "kubernetes:batch/v1:Job": tuple(
        ForceNew(path, "value", _K8S_DIFF, 178)
        for path in ("spec.completions", "spec.parallelism", "spec.selector", "spec.template")
    ),
    "kubernetes:apps/v1:DaemonSet": (ForceNew("spec.selector", "value", _K8S_DIFF, 164),),
    "kubernetes:apps/v1:Deployment": (ForceNew("spec.selector", "value", _K8S_DIFF, 171),),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": (
        ForceNew("roleRef", "value", _K8S_DIFF, 192),
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": (
        ForceNew("roleRef", "value", _K8S_DIFF, 192),
    ),
    "kubernetes:core/v1:Secret": (ForceNew("type", "value", _K8S_DIFF, 155),),
    "kubernetes:core/v1:Service": (ForceNew("spec.clusterIP", "value", _K8S_DIFF, 158),),
}
