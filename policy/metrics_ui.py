"""Guard rail on Ray's Metrics tab: Grafana and the Managed Prometheus query frontend stay private.

The query frontend answers PromQL over every metric of the project without asking who calls
(GoogleCloudPlatform/prometheus-engine cmd/frontend: it "re-exposes the JSON/HTTP API
unauthenticated"), and Grafana shows its dashboards to anyone anonymously
(components/k8s/grafana.py). Inside the cluster that is what Ray's dashboard needs; published
through a LoadBalancer or NodePort it would be the project's metrics for anyone who finds the port.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from components.catalogue import GRAFANA_PORT, PROMETHEUS_FRONTEND_PORT
from policy.props import as_dict, as_list, dig, plain
from policy.ray_head import PUBLIC_SERVICE_TYPES, SERVICE

APPS = {"grafana": "Grafana", "prometheus-frontend": "the Managed Prometheus query frontend"}
PORTS = {GRAFANA_PORT: "Grafana", PROMETHEUS_FRONTEND_PORT: "the Managed Prometheus query frontend"}


def _what_it_reaches(service: dict[str, Any]) -> str | None:
    app = as_dict(dig(service, "spec", "selector")).get("app.kubernetes.io/name")
    if app in APPS:
        return APPS[app]
    for port in as_list(dig(service, "spec", "ports")):
        target = as_dict(port).get("targetPort")
        if target in PORTS:
            return PORTS[target]
    return None


def _metrics_not_exposed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SERVICE:
        return
    props = plain(args.props)
    kind = dig(props, "spec", "type")
    reached = _what_it_reaches(props)
    if kind in PUBLIC_SERVICE_TYPES and reached:
        report(
            f"This {kind} Service publishes {reached}, which answers without credentials (every "
            "metric of the project, or its dashboards): make it ClusterIP and open it with "
            "`kubectl port-forward` (the stack output grafanaPortForward).",
            None,
        )


POLICIES = [
    ResourceValidationPolicy(
        name="metrics-not-exposed",
        description="Grafana and the Managed Prometheus query frontend are never published through a LoadBalancer or NodePort.",
        validate=_metrics_not_exposed,
    ),
]
