"""Scraping the Ray pods' metrics into Google Cloud Managed Service for Prometheus.

A `PodMonitoring` (monitoring.googleapis.com/v1) is namespaced and selects pods by label; the
managed collectors on each node then scrape the named port. The cluster must have managed
Prometheus enabled (the CRD comes with it; reference 2.8 monitoring_config).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.contract import RAY_CLUSTER_LABEL
from components.k8s.provider import KubeTarget, custom_object

API_VERSION = "monitoring.googleapis.com/v1"
# KubeRay labels every pod it creates with its cluster's name (kuberay utils/constant.go).
METRICS_PORT_NAME = "metrics"
SCRAPE_INTERVAL = "30s"


def pod_monitoring_manifest(name: str, namespace: str, ray_cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitoring",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            # Only this stack's Ray pods: head and workers both expose `metrics`.
            "selector": {"matchLabels": {RAY_CLUSTER_LABEL: ray_cluster}},
            "endpoints": [{"port": METRICS_PORT_NAME, "interval": SCRAPE_INTERVAL}],
            # Keep head/worker apart in queries without relabelling every dashboard. Ray's own
            # panels filter on `ray_io_cluster=~"$Cluster"` and list $Cluster from that label,
            # which the scrape adds from the pod's `ray.io/cluster` label as KubeRay's own
            # PodMonitors do (kuberay config/prometheus/podMonitor.yaml, v1.7.0).
            "targetLabels": {
                "fromPod": [
                    {"from": "ray.io/node-type", "to": "ray_node_type"},
                    {"from": "ray.io/group", "to": "ray_group"},
                    {"from": RAY_CLUSTER_LABEL, "to": "ray_io_cluster"},
                ]
            },
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


class RayMetrics(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: RayMetricsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:RayMetrics", name, None, opts)
        custom_object(
            f"{name}-podmonitoring",
            pod_monitoring_manifest(args.name, args.namespace, args.ray_cluster),
            args.target.options(self, depends_on=[args.namespace_resource, *args.depends_on]),
        )
        self.register_outputs({"podMonitoring": args.name})
