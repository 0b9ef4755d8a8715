"""Scraping the Ray pods' metrics into Google Cloud Managed Service for Prometheus.

A `PodMonitoring` (monitoring.googleapis.com/v1) is namespaced and selects pods by label; the
managed collectors on each node then scrape its port: every Ray container's `metrics`, and on a
stack whose GPU workers scale on demand the head's autoscaler port too. The cluster must have
managed Prometheus enabled (the CRD comes with it; reference 2.8 monitoring_config).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.contract import RAY_CLUSTER_LABEL
from components.k8s.provider import KubeTarget, custom_object

API_VERSION = "monitoring.googleapis.com/v1"
METRICS_PORT_NAME = "metrics"
SCRAPE_INTERVAL = "30s"


# Ray's autoscaler serves its own metrics (`autoscaler_active_nodes`, `autoscaler_pending_nodes`,
# ... which Ray's default dashboard plots) from its process on the head, on all addresses at this
# port: AUTOSCALER_METRIC_PORT, autoscaler/_private/constants.py L89, served from
# autoscaler/v2/monitor.py L114-118 `AutoscalerMonitor.__init__` (Ray 2.46.0 and 2.48.0);
# KubeRay's own head PodMonitor scrapes it as `as-metrics` (config/prometheus/podMonitor.yaml,
# v1.7.0). No
# container declares it, and none need to: GMP scrapes a numeric port at the pod's IP whether or
# not a container names it (prometheus-engine v0.15.3 pkg/operator/apis/monitoring/v1/
# pod_config.go L368-400 `endpointScrapeConfig`), so the RayCluster stays as it is.
AUTOSCALER_METRICS_PORT = 44217
HEAD_NODE_TYPE = "head"


# Keep head/worker apart in queries without relabelling every dashboard. Ray's own panels filter
# on `ray_io_cluster=~"$Cluster"` and list $Cluster from that label, which the scrape adds from the
# pod's `ray.io/cluster` label as KubeRay's own PodMonitors do (kuberay
# config/prometheus/podMonitor.yaml, v1.7.0).
TARGET_LABELS = {
    "fromPod": [
        {"from": "ray.io/node-type", "to": "ray_node_type"},
        {"from": "ray.io/group", "to": "ray_group"},
        {"from": RAY_CLUSTER_LABEL, "to": "ray_io_cluster"},
    ]
}


def pod_monitoring_manifest(name: str, namespace: str, ray_cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitoring",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            # Only this stack's Ray pods (KubeRay labels every pod it creates with its cluster's
            # name, kuberay utils/constant.go): head and workers both expose `metrics`.
            "selector": {"matchLabels": {RAY_CLUSTER_LABEL: ray_cluster}},
            "endpoints": [{"port": METRICS_PORT_NAME, "interval": SCRAPE_INTERVAL}],
            "targetLabels": copy.deepcopy(TARGET_LABELS),
        },
    }


def autoscaler_pod_monitoring_name(pod_monitoring: str) -> str:
    return f"{pod_monitoring}-autoscaler"


def autoscaler_pod_monitoring_manifest(
    name: str, namespace: str, ray_cluster: str
) -> dict[str, Any]:
    """The head's autoscaler metrics: only the head runs Ray's autoscaler, and only on a stack
    whose GPU workers scale on demand (a static stack has none, and would show a target down)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitoring",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {
                "matchLabels": {RAY_CLUSTER_LABEL: ray_cluster, "ray.io/node-type": HEAD_NODE_TYPE}
            },
            "endpoints": [{"port": AUTOSCALER_METRICS_PORT, "interval": SCRAPE_INTERVAL}],
            "targetLabels": copy.deepcopy(TARGET_LABELS),
        },
    }


@dataclass(frozen=True)
class RayMetricsArgs:
    target: KubeTarget
    name: str
    namespace: str
    ray_cluster: str
    namespace_resource: pulumi.Resource
    # The CRD gate (crd_gate.py): GKE installs PodMonitoring's CRD after the cluster is up.
    depends_on: Sequence[pulumi.Resource] = ()
    # GPU workers scaled on demand: Ray's autoscaler runs on the head, and its metrics are scraped.
    autoscale: bool = False


class RayMetrics(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: RayMetricsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:RayMetrics", name, None, opts)
        depends_on = [args.namespace_resource, *args.depends_on]
        custom_object(
            f"{name}-podmonitoring",
            pod_monitoring_manifest(args.name, args.namespace, args.ray_cluster),
            args.target.options(self, depends_on=depends_on),
        )
        if args.autoscale:
            custom_object(
                f"{name}-autoscaler-podmonitoring",
                autoscaler_pod_monitoring_manifest(
                    autoscaler_pod_monitoring_name(args.name), args.namespace, args.ray_cluster
                ),
                args.target.options(self, depends_on=depends_on),
            )
        self.register_outputs({"podMonitoring": args.name})
