"""Ray's dashboard with its metrics: an in-cluster Grafana over Managed Prometheus, and the head's env.

Ray's dashboard fills its Metrics tab by embedding Grafana panels and asking Prometheus (Ray 2.60
ray/dashboard/modules/metrics/metrics_head.py: `RAY_GRAFANA_HOST`, `RAY_PROMETHEUS_HOST`,
`RAY_PROMETHEUS_NAME`, `RAY_GRAFANA_IFRAME_HOST`). The stack's metrics are in Google Cloud Managed
Service for Prometheus (scraped by components/k8s/metrics.py, DCGM by GKE), which speaks the
Prometheus query API only with Google credentials; Google's query frontend
(GoogleCloudPlatform/prometheus-engine cmd/frontend: "re-exposes the JSON/HTTP API
unauthenticated") serves it inside the cluster, under a service account that may only read
metrics (`roles/monitoring.viewer`, through Workload Identity). Grafana reads the frontend,
provisioned with its data source and the dashboards: Ray's own, generated from the pinned Ray by
Ray's own factory as its head would write them, and one for training.

Nothing is published: both Services are ClusterIP, reached like the Ray dashboard with
`kubectl port-forward` (policy: metrics-not-exposed). Grafana has no login at all (login form and
basic auth off) and shows the provisioned dashboards to anonymous viewers, so no admin password
exists to leak; embedding is allowed so Ray's dashboard can frame its panels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalogue import GRAFANA_IMAGE as GRAFANA_PIN
from components.catalogue import GRAFANA_PORT, QUERY_FRONTEND_IMAGE
from components.catalogue import PROMETHEUS_FRONTEND_PORT as FRONTEND_PORT
from components.contract import NODE_POOL_LABEL
from components.gcp.monitoring import DCGM_FB_USED, DCGM_GPU_UTIL
from components.k8s.identity import (
    GoogleIdentity,
    service_account_manifest,
    workload_identity_gsa,
)
from components.k8s.provider import KubeTarget, typed_object
from components.k8s.ray_dashboards import ray_dashboards
from jobs.head import run_gauges

# Pinned images: Grafana OSS and the query frontend, pinned in the catalogue
# (components/catalogue.py); the stack passes them by digest through its remote repositories.
GRAFANA_IMAGE = GRAFANA_PIN.upstream_ref
FRONTEND_IMAGE = QUERY_FRONTEND_IMAGE.upstream_ref
# The data source's name is what Ray's embedded panels select (metrics_head.py
# DEFAULT_PROMETHEUS_NAME); its uid is what our own dashboard names.
DATASOURCE_NAME = "Prometheus"
DATASOURCE_UID = "prometheus"
# Where the user's browser finds Grafana: `kubectl port-forward svc/<grafana> 3000:3000`.
IFRAME_HOST = f"http://localhost:{GRAFANA_PORT}"
DASHBOARDS_DIR = "/var/lib/grafana/dashboards"
# Reading metrics is all the frontend does (Cloud Monitoring IAM: monitoring.timeSeries.list).
FRONTEND_ROLE = "roles/monitoring.viewer"


@dataclass(frozen=True)
class GrafanaInputs:
    """Names and placement of the metrics UI, as plain values."""

    grafana: str  # the Grafana Deployment and Service
    frontend: str  # the query frontend's Deployment, Service and Kubernetes SA
    namespace: str
    project: str
    system_pool_name: str
    # The pods' Ray (the framework image's): Grafana serves that Ray's own dashboards.
    ray_version: str
    labels: Mapping[str, str] = field(default_factory=dict)
    grafana_image: str = GRAFANA_IMAGE
    frontend_image: str = FRONTEND_IMAGE

    @property
    def grafana_url(self) -> str:
        return service_url(self.grafana, self.namespace, GRAFANA_PORT)

    @property
    def frontend_url(self) -> str:
        return service_url(self.frontend, self.namespace, FRONTEND_PORT)


def service_url(service: str, namespace: str, port: int) -> str:
    """A Service's address inside the cluster (its `<service>.<namespace>.svc` DNS name)."""
    return f"http://{service}.{namespace}.svc:{port}"


def head_env(inputs: GrafanaInputs) -> list[dict[str, str]]:
    """The Ray head's env for its Metrics tab: Grafana and Prometheus as the head reaches them
    (in-cluster), Grafana as the user's browser reaches it (the port-forward)."""
    return [
        {"name": "RAY_GRAFANA_HOST", "value": inputs.grafana_url},
        {"name": "RAY_GRAFANA_IFRAME_HOST", "value": IFRAME_HOST},
        {"name": "RAY_PROMETHEUS_HOST", "value": inputs.frontend_url},
        {"name": "RAY_PROMETHEUS_NAME", "value": DATASOURCE_NAME},
    ]


def _panel(
    title: str, expr: str, legend: str, unit: str, x: int, y: int, panel_id: int
) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": DATASOURCE_UID},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {
                "refId": "A",
                "datasource": {"type": "prometheus", "uid": DATASOURCE_UID},
                "expr": expr,
                "legendFormat": legend,
            }
        ],
    }


@dataclass(frozen=True)
class Panel:
    """One time series of the training dashboard and where its metric comes from."""

    title: str
    expr: str
    legend: str
    unit: str
    metric: str  # the series' name as PromQL reads it
    source: str  # "dcgm", "ray", "run" or "cloud" (a Cloud Monitoring metric type, below)


def cloud_metric(metric_type: str) -> str:
    """A Cloud Monitoring metric type as Managed Prometheus's PromQL names it: the first `/`
    becomes `:`, every other `/` and `.` an `_` (cloud.google.com/monitoring/promql/promql-mapping)."""
    domain, _, path = metric_type.partition("/")
    return domain.replace(".", "_") + ":" + path.replace("/", "_").replace(".", "_")


# Cloud Monitoring metric types the dashboard reads (cloud.google.com/monitoring/api/metrics_gcp):
# Managed Lustre's bytes read and written, DELTA per storage target (sampled every 60 s, only
# while there is I/O); a GPU VM's GPU-network (RDMA) bytes, a GAUGE holding the last minute's
# delta, per VM (no NIC label), published for A3 Mega and later on reserved capacity, not on
# Spot VMs (cloud.google.com/ai-hypercomputer/docs/monitor), so a spot pool shows nothing there.
LUSTRE_READ = "lustre.googleapis.com/instance/read_bytes_total"
LUSTRE_WRITE = "lustre.googleapis.com/instance/write_bytes_total"
GPU_NET_RX = "compute.googleapis.com/instance/gpu/throughput_rx_bytes"
GPU_NET_TX = "compute.googleapis.com/instance/gpu/throughput_tx_bytes"
CLOUD_METRICS = (LUSTRE_READ, LUSTRE_WRITE, GPU_NET_RX, GPU_NET_TX)


def _run_panel(title: str, key: str, unit: str) -> Panel:
    # A replaced supervisor starts a new series (Ray's worker-id label): one line per run.
    name = run_gauges.PROMETHEUS_NAMES[key]
    return Panel(title, f"max by (run) ({name})", "{{run}}", unit, name, "run")


def _ray_panel(title: str, name: str, unit: str) -> Panel:
    return Panel(title, f"sum by (instance) ({name})", "{{instance}}", unit, name, "ray")


def _lustre_panel(title: str, metric_type: str) -> Panel:
    name = cloud_metric(metric_type)
    expr = f"sum by (instance_id) (rate({name}[5m]))"
    return Panel(title, expr, "{{instance_id}}", "Bps", name, "cloud")


def _gpu_net_panel(title: str, metric_type: str) -> Panel:
    name = cloud_metric(metric_type)  # bytes of the last minute: / 60 for bytes per second
    return Panel(
        title, f"sum by (machine_id) ({name}) / 60", "{{machine_id}}", "Bps", name, "cloud"
    )


# The training dashboard: the run's own figures (the supervisor's gauges, jobs/head/run_gauges.py),
# GKE's managed DCGM metrics (the same names as the stack's Cloud Monitoring dashboard,
# components/gcp/monitoring.py), the network and Lustre, and Ray's own node metrics.
TRAINING_PANELS: tuple[Panel, ...] = (
    _run_panel("Reward (mean) per run", "reward", "short"),
    _run_panel("KL to the reference policy per run (veRL)", "kl", "short"),
    _run_panel("Step time per run", "step_time", "s"),
    _run_panel("Tokens per second per GPU per run", "throughput", "short"),
    Panel(
        "GPU utilisation per node (DCGM)",
        f"avg by (Hostname) ({DCGM_GPU_UTIL})",
        "{{Hostname}}",
        "percent",
        DCGM_GPU_UTIL,
        "dcgm",
    ),
    Panel(
        "GPU memory used per node (DCGM)",
        f"sum by (Hostname) ({DCGM_FB_USED})",
        "{{Hostname}}",
        "decmbytes",
        DCGM_FB_USED,
        "dcgm",
    ),
    _gpu_net_panel("GPU network (RDMA) received per VM (reserved VMs only)", GPU_NET_RX),
    _gpu_net_panel("GPU network (RDMA) sent per VM (reserved VMs only)", GPU_NET_TX),
    _lustre_panel("Lustre read", LUSTRE_READ),
    _lustre_panel("Lustre written", LUSTRE_WRITE),
    _ray_panel(
        "Node network received (Ray: gVNIC and pod interfaces)",
        "ray_node_network_receive_speed",
        "Bps",
    ),
    _ray_panel(
        "Node network sent (Ray: gVNIC and pod interfaces)", "ray_node_network_send_speed", "Bps"
    ),
    _ray_panel("GPUs Ray counts per node", "ray_node_gpus_available", "short"),
    _ray_panel("Object store used (Ray)", "ray_object_store_memory", "bytes"),
)


def training_dashboard() -> dict[str, Any]:
    """One dashboard for a GRPO run: its reward, KL, step time and tokens/s, GPUs busy and full
    per node, the GPU network, Lustre, and Ray's node metrics."""
    panels = [
        _panel(p.title, p.expr, p.legend, p.unit, (i % 2) * 12, (i // 2) * 8, i + 1)
        for i, p in enumerate(TRAINING_PANELS)
    ]
    return {
        "uid": "rlOnGkeTraining",
        "title": "rl-on-gke training",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "panels": panels,
        "templating": {"list": []},
        "tags": ["rl-on-gke"],
    }


def dashboards(ray_version: str) -> dict[str, str]:
    """Every dashboard file Grafana serves, Ray's for the pods' `ray_version` (ray_dashboards.py)."""
    return {
        **ray_dashboards(ray_version),
        "rlOnGkeTraining.json": json.dumps(training_dashboard()),
    }


def provisioning_manifest(inputs: GrafanaInputs) -> dict[str, Any]:
    """Grafana's provisioning: the frontend as its default Prometheus data source, and the
    dashboards folder (files mounted from one ConfigMap per dashboard)."""
    datasources = {
        "apiVersion": 1,
        "datasources": [
            {
                "name": DATASOURCE_NAME,
                "uid": DATASOURCE_UID,
                "type": "prometheus",
                "access": "proxy",
                "url": inputs.frontend_url,
                "isDefault": True,
                "editable": False,
            }
        ],
    }
    providers = {
        "apiVersion": 1,
        "providers": [
            {
                "name": "rl-on-gke",
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "options": {"path": DASHBOARDS_DIR, "foldersFromFilesStructure": False},
            }
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{inputs.grafana}-provisioning",
            "namespace": inputs.namespace,
            "labels": dict(inputs.labels),
        },
        "data": {
            "datasources.yaml": json.dumps(datasources, indent=1),
            "dashboards.yaml": json.dumps(providers, indent=1),
        },
    }


def dashboard_config_name(inputs: GrafanaInputs, file_name: str) -> str:
    stem = file_name.removesuffix(".json").lower()
    return f"{inputs.grafana}-dash-{stem}"[:63].rstrip("-")


def dashboard_manifests(inputs: GrafanaInputs, files: Mapping[str, str]) -> list[dict[str, Any]]:
    """One ConfigMap per dashboard: each stays under a ConfigMap's 1 MiB whatever the others
    weigh (Ray 2.48.0's default dashboard is ~90 KB), and a changed dashboard changes only its
    own ConfigMap, which the plan diff and the preview name."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": dashboard_config_name(inputs, name),
                "namespace": inputs.namespace,
                "labels": dict(inputs.labels),
            },
            "data": {name: content},
        }
        for name, content in sorted(files.items())
    ]


_RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}


# The images' own users: Grafana's image runs as uid 472, the frontend's example as 1000.
GRAFANA_UID = 472
FRONTEND_UID = 1000


def _pod_spec(
    inputs: GrafanaInputs, containers: list[dict[str, Any]], uid: int, **extra: Any
) -> dict[str, Any]:
    return {
        # The on-demand system pool, beside the Ray head: never a GPU node.
        "nodeSelector": {NODE_POOL_LABEL: inputs.system_pool_name},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": uid,
            "runAsGroup": uid,
            "fsGroup": uid,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": containers,
        **extra,
    }


def _deployment(name: str, inputs: GrafanaInputs, pod: dict[str, Any], app: str) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": inputs.namespace, "labels": dict(inputs.labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": {**inputs.labels, **selector}}, "spec": pod},
        },
    }


def _service(name: str, inputs: GrafanaInputs, app: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": inputs.namespace, "labels": dict(inputs.labels)},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": name},
            "ports": [{"name": "http", "port": port, "targetPort": port}],
        },
    }


def frontend_manifests(inputs: GrafanaInputs) -> tuple[dict[str, Any], dict[str, Any]]:
    container = {
        "name": "frontend",
        "image": inputs.frontend_image,
        "args": [f"--web.listen-address=:{FRONTEND_PORT}", f"--query.project-id={inputs.project}"],
        "ports": [{"name": "http", "containerPort": FRONTEND_PORT}],
        "readinessProbe": {"httpGet": {"path": "/-/ready", "port": FRONTEND_PORT}},
        "livenessProbe": {"httpGet": {"path": "/-/healthy", "port": FRONTEND_PORT}},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "securityContext": dict(_RESTRICTED),
    }
    pod = _pod_spec(inputs, [container], FRONTEND_UID, serviceAccountName=inputs.frontend)
    return (
        _deployment(inputs.frontend, inputs, pod, "prometheus-frontend"),
        _service(inputs.frontend, inputs, "prometheus-frontend", FRONTEND_PORT),
    )


def grafana_manifests(
    inputs: GrafanaInputs, dashboard_files: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    env = {
        # No login at all: nobody can become admin, so no password exists to keep.
        "GF_AUTH_DISABLE_LOGIN_FORM": "true",
        "GF_AUTH_BASIC_ENABLED": "false",
        "GF_AUTH_ANONYMOUS_ENABLED": "true",
        "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
        # Ray's dashboard frames Grafana's panels (metrics_head.py, RAY_GRAFANA_IFRAME_HOST).
        "GF_SECURITY_ALLOW_EMBEDDING": "true",
        "GF_ANALYTICS_REPORTING_ENABLED": "false",
        "GF_LOG_MODE": "console",  # the root filesystem is read-only: no log files
        "GF_ANALYTICS_CHECK_FOR_UPDATES": "false",
        "GF_PATHS_PROVISIONING": "/etc/grafana/provisioning",
        "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH": f"{DASHBOARDS_DIR}/rlOnGkeTraining.json",
    }
    mounts = [
        {"name": "datasources", "mountPath": "/etc/grafana/provisioning/datasources"},
        {"name": "providers", "mountPath": "/etc/grafana/provisioning/dashboards"},
        {"name": "data", "mountPath": "/var/lib/grafana"},
        {"name": "tmp", "mountPath": "/tmp"},
        # One projected volume, no subPath: the kubelet refreshes projected ConfigMaps in a
        # running pod but never a subPath mount (https://kubernetes.io/docs/concepts/
        # configuration/configmap/#mounted-configmaps-are-updated-automatically).
        {"name": "dashboards", "mountPath": DASHBOARDS_DIR},
    ]
    provisioning = f"{inputs.grafana}-provisioning"
    volumes = [
        {
            "name": "datasources",
            "configMap": {
                "name": provisioning,
                "items": [{"key": "datasources.yaml", "path": "datasources.yaml"}],
            },
        },
        {
            "name": "providers",
            "configMap": {
                "name": provisioning,
                "items": [{"key": "dashboards.yaml", "path": "dashboards.yaml"}],
            },
        },
        {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
        {
            "name": "dashboards",
            "projected": {
                "sources": [
                    {"configMap": {"name": dashboard_config_name(inputs, name)}}
                    for name in sorted(dashboard_files)
                ]
            },
        },
    ]
    container = {
        "name": "grafana",
        "image": inputs.grafana_image,
        "ports": [{"name": "http", "containerPort": GRAFANA_PORT}],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "readinessProbe": {"httpGet": {"path": "/api/health", "port": GRAFANA_PORT}},
        "resources": {
            "requests": {"cpu": "100m", "memory": "256Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
        "securityContext": dict(_RESTRICTED),
        "volumeMounts": mounts,
    }
    pod = _pod_spec(
        inputs, [container], GRAFANA_UID, volumes=volumes, automountServiceAccountToken=False
    )
    return (
        _deployment(inputs.grafana, inputs, pod, "grafana"),
        _service(inputs.grafana, inputs, "grafana", GRAFANA_PORT),
    )


@dataclass(frozen=True)
class RayGrafanaArgs:
    target: KubeTarget
    inputs: GrafanaInputs
    gsa_account_id: str
    namespace_resource: pulumi.Resource
    system_pool: pulumi.Resource | None = None


class RayGrafana(pulumi.ComponentResource):
    """The query frontend (its Google SA, role and Workload Identity binding, its KSA), Grafana,
    their ClusterIP Services and Grafana's provisioning."""

    def __init__(
        self, name: str, args: RayGrafanaArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:RayGrafana", name, None, opts)
        inputs, target = args.inputs, args.target
        gsa = workload_identity_gsa(
            f"{name}-frontend",
            GoogleIdentity(
                project=inputs.project,
                account_id=args.gsa_account_id,
                display_name=f"Managed Prometheus query frontend ({inputs.namespace})",
                roles=(FRONTEND_ROLE,),
                namespace=inputs.namespace,
                service_account=inputs.frontend,
            ),
            cluster=target.cluster,
            parent=self,
        )
        base = [args.namespace_resource]
        placed = [*base, *([args.system_pool] if args.system_pool is not None else [])]
        ksa = service_account_manifest(inputs.frontend, inputs.namespace, gsa.email)
        ksa_resource = typed_object(
            k8s.core.v1.ServiceAccount,
            f"{name}-frontend-ksa",
            ksa,
            target.options(self, depends_on=base),
        )
        frontend, frontend_service = frontend_manifests(inputs)
        typed_object(
            k8s.apps.v1.Deployment,
            f"{name}-frontend",
            frontend,
            target.options(self, depends_on=[*placed, ksa_resource]),
        )
        typed_object(
            k8s.core.v1.Service,
            f"{name}-frontend-service",
            frontend_service,
            target.options(self, depends_on=base),
        )
        files = dashboards(inputs.ray_version)
        configs = [provisioning_manifest(inputs), *dashboard_manifests(inputs, files)]
        config_resources = [
            typed_object(
                k8s.core.v1.ConfigMap,
                f"{name}-{c['metadata']['name'].removeprefix(inputs.grafana + '-')}",
                c,
                target.options(self, depends_on=base),
            )
            for c in configs
        ]
        grafana, grafana_service = grafana_manifests(inputs, list(files))
        typed_object(
            k8s.apps.v1.Deployment,
            f"{name}-grafana",
            grafana,
            target.options(self, depends_on=[*placed, *config_resources]),
        )
        typed_object(
            k8s.core.v1.Service,
            f"{name}-grafana-service",
            grafana_service,
            target.options(self, depends_on=base),
        )
        self.register_outputs(
            {"grafanaService": inputs.grafana, "frontendService": inputs.frontend}
        )
