"""Guard rails on the Ray layer: where the head runs, and that its dashboard stays private.

The head holds the GCS and the driver: if its node is preempted the whole Ray cluster and the
running job go with it (ray#39787; kuberay#2153: GCS fault tolerance does not resume training),
so it must sit on on-demand CPU capacity. The dashboard port (8265) is also the Jobs API, which
runs arbitrary code: it must never be published outside the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.catalogue import RAY_DASHBOARD_PORT
from components.contract import NODE_POOL_LABEL
from policy.gcp import NODE_POOL
from policy.props import UNKNOWN, as_dict, as_list, dig, plain

RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAY_JOB = "kubernetes:ray.io/v1:RayJob"
RAY_SERVICE = "kubernetes:ray.io/v1:RayService"
SERVICE = "kubernetes:core/v1:Service"
PUBLIC_SERVICE_TYPES = ("LoadBalancer", "NodePort")
# KubeRay labels head pods `ray.io/node-type: head` (ray-operator/controllers/ray/utils/constant.go).
HEAD_SELECTOR = ("ray.io/node-type", "head")


def ray_cluster_specs(
    resource_type: str, props: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every RayCluster spec a Ray custom resource carries, with where it sits."""
    if resource_type == RAY_CLUSTER:
        yield "spec", as_dict(dig(props, "spec"))
    elif resource_type == RAY_JOB and isinstance(dig(props, "spec", "rayClusterSpec"), dict):
        yield "spec.rayClusterSpec", dig(props, "spec", "rayClusterSpec")
    elif resource_type == RAY_SERVICE and isinstance(dig(props, "spec", "rayClusterConfig"), dict):
        yield "spec.rayClusterConfig", dig(props, "spec", "rayClusterConfig")


def _pool_is_on_demand_cpu(pool: dict[str, Any]) -> tuple[bool, str]:
    config = as_dict(pool.get("nodeConfig"))
    if config.get("spot") is True or config.get("preemptible") is True:
        return False, "is a spot pool"
    if as_list(config.get("guestAccelerators")):
        return False, "is a GPU pool"
    return True, ""


def _ray_head_on_on_demand_cpu_pool(args: StackValidationArgs, report: ReportViolation) -> None:
    pools: dict[str, dict[str, Any]] = {}
    for resource in args.resources:
        if resource.resource_type == NODE_POOL:
            props = plain(resource.props)
            if isinstance(props.get("name"), str):
                pools[props["name"]] = props
    for resource in args.resources:
        props = plain(resource.props)
        for where, spec in ray_cluster_specs(resource.resource_type, props):
            _check_head(resource, where, spec, pools, report)


def _check_head(
    resource: PolicyResource,
    where: str,
    spec: dict[str, Any],
    pools: dict[str, dict[str, Any]],
    report: ReportViolation,
) -> None:
    selector = dig(spec, "headGroupSpec", "template", "spec", "nodeSelector")
    if selector is UNKNOWN:
        return
    pool_name = as_dict(selector).get(NODE_POOL_LABEL)
    if pool_name is UNKNOWN:
        return
    field = f"{where}.headGroupSpec.template.spec.nodeSelector"
    if not pool_name:
        report(
            f"{resource.name}: the Ray head has no '{NODE_POOL_LABEL}' node selector, so it may land on "
            f"a spot GPU node and take the job down when preempted: set {field}"
            f"['{NODE_POOL_LABEL}'] to the on-demand system pool.",
            resource.urn,
        )
        return
    pool = pools.get(pool_name)
    if pool is None:
        report(
            f"{resource.name}: the Ray head selects node pool '{pool_name}', which this stack does not "
            f"define: point {field}['{NODE_POOL_LABEL}'] at the on-demand system pool.",
            resource.urn,
        )
        return
    ok, why = _pool_is_on_demand_cpu(pool)
    if not ok:
        report(
            f"{resource.name}: the Ray head is pinned to pool '{pool_name}', which {why}: the head must "
            "run on on-demand CPU capacity (only workers ride spot, and GPUs are wasted on the head). "
            f"Set {field}['{NODE_POOL_LABEL}'] to the system pool.",
            resource.urn,
        )


def _targets_dashboard(service: dict[str, Any]) -> bool:
    selector = as_dict(dig(service, "spec", "selector"))
    if selector.get(HEAD_SELECTOR[0]) == HEAD_SELECTOR[1]:
        return True
    for port in as_list(dig(service, "spec", "ports")):
        port = as_dict(port)
        if (
            RAY_DASHBOARD_PORT in (port.get("port"), port.get("targetPort"))
            or port.get("targetPort") == "dashboard"
        ):
            return True
    return False


def _ray_dashboard_not_exposed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = plain(args.props)
    for where, spec in ray_cluster_specs(args.resource_type, props):
        head = as_dict(spec.get("headGroupSpec"))
        for field, value in (
            ("serviceType", head.get("serviceType")),
            ("headService.spec.type", dig(head, "headService", "spec", "type")),
        ):
            if value in PUBLIC_SERVICE_TYPES:
                report(
                    f"{where}.headGroupSpec.{field} is {value}, which publishes the Ray dashboard and "
                    "Jobs API (port 8265, runs arbitrary code) outside the cluster: use ClusterIP and "
                    "reach it with `kubectl port-forward`.",
                    None,
                )
        if head.get("enableIngress") is True:
            report(
                f"{where}.headGroupSpec.enableIngress is true, which exposes the Ray dashboard and Jobs "
                "API through an Ingress: turn it off and use `kubectl port-forward`.",
                None,
            )
    if args.resource_type == SERVICE:
        kind = dig(props, "spec", "type")
        if kind in PUBLIC_SERVICE_TYPES and _targets_dashboard(props):
            report(
                f"This {kind} Service reaches the Ray head / dashboard port {RAY_DASHBOARD_PORT}, publishing "
                "a Jobs API that runs arbitrary code: make it ClusterIP and use `kubectl port-forward`.",
                None,
            )


# Both written by components/k8s/raycluster.py (docs/deploy.md, "Who owns the RayCluster").
PATCH_FORCE = "pulumi.com/patchForce"


def _ray_cluster_changes_reach_the_head(
    args: ResourceValidationArgs, report: ReportViolation
) -> None:
    """Without Recreate a spec change never reaches the running pods (kuberay v1.7.0
    raycluster_controller.go L1462-1500); without patchForce an apply after Ray's autoscaler
    wrote `replicas` fails on the worker list it then owns (server-side apply, atomic lists)."""
    if args.resource_type != RAY_CLUSTER:
        return
    props = plain(args.props)
    strategy = dig(props, "spec", "upgradeStrategy", "type")
    if strategy is not UNKNOWN and strategy != "Recreate":
        report(
            f"spec.upgradeStrategy.type is {strategy!r}: set it to 'Recreate', or a change of the "
            "RayCluster never reaches its running head and workers.",
            None,
        )
    force = as_dict(dig(props, "metadata", "annotations")).get(PATCH_FORCE)
    if force is not UNKNOWN and force != "true":
        report(
            f"metadata.annotations['{PATCH_FORCE}'] is {force!r}: set it to 'true', or the next "
            "update after Ray's autoscaler wrote the worker count fails with a field conflict.",
            None,
        )


POLICIES = [
    ResourceValidationPolicy(
        name="ray-cluster-changes-reach-the-head",
        description="The RayCluster recreates its pods on a change and applies over the autoscaler's writes.",
        validate=_ray_cluster_changes_reach_the_head,
    ),
    StackValidationPolicy(
        name="ray-head-on-on-demand-cpu-pool",
        description="The Ray head is pinned (gke-nodepool selector) to a pool that is neither spot nor GPU.",
        validate=_ray_head_on_on_demand_cpu_pool,
    ),
    ResourceValidationPolicy(
        name="ray-dashboard-not-exposed",
        description="The Ray dashboard / Jobs API is never published through a LoadBalancer, NodePort or Ingress.",
        validate=_ray_dashboard_not_exposed,
    ),
]
