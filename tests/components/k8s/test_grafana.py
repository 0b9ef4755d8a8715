"""Ray's Metrics tab: Grafana and the Managed Prometheus query frontend, valid, private, wired to the head.

The head's env is held to the real Ray: a local Ray head started with it answers its dashboard's
`/api/grafana_health` with the iframe host and the dashboard uids the provisioned dashboards
carry (Ray 2.60 metrics_head.py `grafana_health`), against a loopback stand-in for Grafana's
`/api/health`.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.gcp.monitoring import DCGM_METRICS
from components.k8s import grafana
from components.k8s.grafana import GrafanaInputs
from components.k8s.metrics import pod_monitoring_manifest
from components.k8s.ray_dashboards import RAY_GRAFANA_DIR, ray_dashboards, ray_versions
from jobs.head import run_gauges
from tests import localray
from tests.components.k8s.manifests import validate_core
from tests.components.k8s.pinned_ray import pinned_ray_package, pinned_ray_venv
from tests.components.promql import selected_metrics


def inputs(**overrides: Any) -> GrafanaInputs:
    return GrafanaInputs(
        **{
            "grafana": "rl-test-grafana",
            "frontend": "rl-test-prom-frontend",
            "namespace": "rl-train",
            "project": "example-project",
            "system_pool_name": "system",
            "ray_version": "2.48.0",
            **overrides,
        }
    )


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return grafana.dashboards("2.48.0")


def _all_manifests(files: dict[str, str]) -> list[dict[str, Any]]:
    ins = inputs()
    return [
        *grafana.frontend_manifests(ins),
        *grafana.grafana_manifests(ins, list(files)),
        grafana.provisioning_manifest(ins),
        *grafana.dashboard_manifests(ins, files),
    ]


def test_every_manifest_validates_against_the_kubernetes_schemas(files) -> None:
    for manifest in _all_manifests(files):
        validate_core(manifest)  # kubernetes-validate, strict: unknown fields fail too


def test_services_are_cluster_internal_and_reach_their_containers(files) -> None:
    manifests = _all_manifests(files)
    deployments = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Deployment"}
    services = [m for m in manifests if m["kind"] == "Service"]
    assert len(services) == 2
    for service in services:
        assert service["spec"]["type"] == "ClusterIP"
        pod = deployments[service["metadata"]["name"]]["spec"]["template"]
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        [port] = service["spec"]["ports"]
        container_ports = [p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]]
        assert port["targetPort"] in container_ports


def test_the_head_reaches_grafana_and_prometheus_where_their_services_are() -> None:
    ins = inputs()
    env = {e["name"]: e["value"] for e in grafana.head_env(ins)}
    assert env["RAY_GRAFANA_HOST"] == "http://rl-test-grafana.rl-train.svc:3000"
    assert env["RAY_PROMETHEUS_HOST"] == "http://rl-test-prom-frontend.rl-train.svc:9090"
    assert env["RAY_GRAFANA_IFRAME_HOST"] == "http://localhost:3000"
    datasources = json.loads(grafana.provisioning_manifest(ins)["data"]["datasources.yaml"])
    [source] = datasources["datasources"]
    # Ray's embedded panels select the data source by the name the head is told.
    assert source["name"] == env["RAY_PROMETHEUS_NAME"] and source["isDefault"] is True
    assert source["url"] == env["RAY_PROMETHEUS_HOST"]


def test_grafana_has_no_login_and_no_password_anywhere(files) -> None:
    deployment, _ = grafana.grafana_manifests(inputs(), list(files))
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["GF_AUTH_DISABLE_LOGIN_FORM"] == "true" and env["GF_AUTH_BASIC_ENABLED"] == "false"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert not any("PASSWORD" in name for name in env)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_every_dashboard_file_is_mounted_from_a_configmap_under_its_limit(files) -> None:
    """All in one projected volume, no subPath: the kubelet refreshes a projected ConfigMap in a
    running pod, never one mounted with subPath (https://kubernetes.io/docs/concepts/
    configuration/configmap/#mounted-configmaps-are-updated-automatically), so an `up` that
    changes a dashboard shows it without a Grafana restart."""
    ins = inputs()
    deployment, _ = grafana.grafana_manifests(ins, list(files))
    pod = deployment["spec"]["template"]["spec"]
    mounts = pod["containers"][0]["volumeMounts"]
    assert all("subPath" not in m for m in mounts)
    (mount,) = [m for m in mounts if m["mountPath"] == grafana.DASHBOARDS_DIR]
    volumes = {v["name"]: v for v in pod["volumes"]}
    sources = volumes[mount["name"]]["projected"]["sources"]
    configs = {c["metadata"]["name"]: c for c in grafana.dashboard_manifests(ins, files)}
    assert {s["configMap"]["name"] for s in sources} == set(configs)
    assert sorted(name for c in configs.values() for name in c["data"]) == sorted(files)
    for name, config in configs.items():
        (file_name,) = config["data"]
        assert config["data"][file_name] == files[file_name], name
        assert len(json.dumps(config)) < 1024 * 1024  # a ConfigMap holds at most 1 MiB


def test_rays_own_dashboards_are_provisioned_with_the_uids_its_head_embeds(files) -> None:
    uids = {json.loads(content)["uid"] for content in files.values()}
    assert {"rayDefaultDashboard", "rayTrainDashboard", "rlOnGkeTraining"} == uids


CLOUD_METRIC_TYPES = json.loads((Path(__file__).parent / "cloud_metric_types.json").read_text())


def test_the_training_dashboard_queries_metrics_that_exist(files) -> None:
    """Each panel's series, by where it comes from: DCGM as the stack's Cloud Monitoring dashboard
    names it; Ray's node series as Ray's own default dashboard queries them (Ray's real names);
    the run's gauges as the supervisor exports them (held to a real Ray's export in
    tests/jobs/head/test_run_gauges_supervised.py); Cloud Monitoring types from Google's metric
    list (copied into cloud_metric_types.json), named as Managed Prometheus's PromQL reads them."""
    ray_default = files["rayDefaultDashboard.json"]
    board = json.loads(files["rlOnGkeTraining.json"])
    by_title = {p.title: p for p in grafana.TRAINING_PANELS}
    cloud = {grafana.cloud_metric(t): t for t in CLOUD_METRIC_TYPES["metrics"]}
    sources = set()
    for panel in board["panels"]:
        [target] = panel["targets"]
        assert target["datasource"]["uid"] == grafana.DATASOURCE_UID
        spec = by_title[panel["title"]]
        # Parsed as Prometheus parses it: the query selects exactly the panel's metric.
        assert selected_metrics(target["expr"]) == {spec.metric}, target["expr"]
        sources.add(spec.source)
        if spec.source == "dcgm":
            assert spec.metric in DCGM_METRICS, spec.metric
        elif spec.source == "ray":
            assert spec.metric in ray_default, spec.metric
        elif spec.source == "run":
            assert spec.metric in run_gauges.PROMETHEUS_NAMES.values(), spec.metric
        else:
            assert spec.source == "cloud" and spec.metric in cloud, spec.metric
            kind = CLOUD_METRIC_TYPES["metrics"][cloud[spec.metric]]["kind"]
            # A DELTA series is a rate over time; a GAUGE is read as it is (rate() of a gauge
            # answers nothing in Managed Prometheus, prometheus-engine #436).
            assert ("rate(" in target["expr"]) == (kind == "DELTA"), target["expr"]
    assert sources == {"dcgm", "ray", "run", "cloud"}


def test_a_query_that_does_not_parse_is_caught_by_the_same_check() -> None:
    broken = grafana.TRAINING_PANELS[0].expr.rstrip(")")
    with pytest.raises(ValueError):
        selected_metrics(broken)


def test_the_training_dashboard_plots_the_runs_reward_kl_step_time_and_tokens() -> None:
    plotted = {p.metric for p in grafana.TRAINING_PANELS if p.source == "run"}
    names = run_gauges.PROMETHEUS_NAMES
    assert {names[k] for k in ("reward", "kl", "step_time", "throughput")} <= plotted


def test_cloud_metric_types_are_named_as_promql_reads_them() -> None:
    # cloud.google.com/monitoring/promql/promql-mapping, its own example
    assert (
        grafana.cloud_metric("compute.googleapis.com/instance/cpu/utilization")
        == "compute_googleapis_com:instance_cpu_utilization"
    )
    assert (
        grafana.cloud_metric(grafana.LUSTRE_READ)
        == "lustre_googleapis_com:instance_read_bytes_total"
    )


@pytest.fixture
def fake_grafana_health() -> Iterator[str]:
    """Grafana's `/api/health` answer on loopback (the head only reads `database`)."""

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"database": "ok", "version": "11.1.3"}).encode()
            self.send_response(200 if self.path == "/api/health" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.ray
def test_a_ray_head_with_this_env_offers_its_metrics_tab_with_our_dashboards(
    files, fake_grafana_health
) -> None:
    env = {e["name"]: e["value"] for e in grafana.head_env(inputs())}
    env["RAY_GRAFANA_HOST"] = fake_grafana_health  # the in-cluster Service, here on loopback
    head = localray.start(num_cpus=1, extra_env=env)
    try:
        with urllib.request.urlopen(f"{head.dashboard_url}/api/grafana_health", timeout=30) as r:
            answer = json.load(r)
    finally:
        head.stop()
    data = answer["data"]
    assert data["grafanaHost"] == grafana.IFRAME_HOST, answer
    assert data["dashboardDatasource"] == grafana.DATASOURCE_NAME
    provisioned = {json.loads(content)["uid"] for content in files.values()}
    assert data["dashboardUids"]["default"] in provisioned
    assert data["dashboardUids"]["train"] in provisioned


def _labels(node: Any, found: set[str]) -> None:
    """Every label a PromQL syntax tree selects on or groups by."""
    import promql_parser

    if isinstance(node, promql_parser.VectorSelector):
        found.update(m.name for m in node.matchers.matchers)
    modifier = getattr(node, "modifier", None)
    for attr in ("labels",):
        found.update(getattr(modifier, attr, None) or [])
    matching = getattr(modifier, "matching", None)
    found.update(getattr(matching, "labels", None) or [])
    for child in ("expr", "lhs", "rhs", "vector_selector", "param"):
        value = getattr(node, child, None)
        if value is not None and not isinstance(value, (int, float, str)):
            _labels(value, found)
    for arg in getattr(node, "args", None) or []:
        _labels(arg, found)


def _served_ray_queries(version: str) -> Iterator[str]:
    """Every query of the Ray dashboards served to pods of Ray `version`, rows' panels too, with
    Grafana's interval placeholders filled in."""
    for content in ray_dashboards(version).values():
        panels = list(json.loads(content)["panels"])
        while panels:
            panel = panels.pop()
            panels += panel.get("panels", [])
            for target in panel.get("targets", []):
                query = target["expr"]
                for placeholder in ("$__rate_interval", "$__interval", "$window"):
                    query = query.replace(placeholder, "5m")
                yield query


def _served_ray_labels(version: str) -> set[str]:
    import promql_parser

    found: set[str] = set()
    for query in _served_ray_queries(version):
        _labels(promql_parser.parse(query), found)
    return found


@functools.cache
def _pinned_ray_declarations(version: str) -> tuple[str, bytes]:
    """What the pinned Ray declares: its Python sources and its compiled core (the extension
    modules, the raylet and the GCS server), read once per version. Its dashboards' panel
    definitions are left out: they are the served queries' own source, so a check against them
    could not fail."""
    package = pinned_ray_package(version)
    panels = package / "dashboard/modules/metrics/dashboards"
    python = "\n".join(
        p.read_text(errors="replace") for p in package.rglob("*.py") if panels not in p.parents
    )
    executables = [
        p for p in (package / "core/src/ray").rglob("*") if p.is_file() and os.access(p, os.X_OK)
    ]
    compiled = b"".join(p.read_bytes() for p in [*package.rglob("*.so"), *executables])
    return python, compiled


def _label_declared(label: str, python: str, compiled: bytes) -> bool:
    """A tag key Ray's Python quotes (`labelnames=("NodeType", ...)`, `TagKey("Component")`) or
    its compiled core holds as a string of its own (C++ tag keys such as `NodeAddress`)."""
    quoted = re.search(rf"[\"']{label}[\"']", python) is not None
    return quoted or b"\0" + label.encode() + b"\0" in compiled


# Labels the scrape adds, not Ray: Prometheus' own and the PodMonitoring's targetLabels.
SCRAPE_LABELS = {"instance", "job"} | {
    rule["to"]
    for rule in pod_monitoring_manifest("m", "ns", "c")["spec"]["targetLabels"]["fromPod"]
}


@pytest.mark.parametrize("version", ["2.46.0", "2.48.0"])
def test_no_served_ray_panel_filters_on_a_label_the_pods_ray_does_not_emit(version) -> None:
    """Every label a panel served to pods of Ray `version` selects on or groups by is one that
    Ray declares as a tag key (its installed package, `make venv-ray`, outside the dashboards'
    own panel definitions), or one the scrape adds."""
    python, compiled = _pinned_ray_declarations(version)
    served = _served_ray_labels(version)
    missing = {
        label for label in served - SCRAPE_LABELS if not _label_declared(label, python, compiled)
    }
    assert missing == set(), f"labels Ray {version} never emits: {sorted(missing)}"
    assert "RayNodeType" not in served


def test_the_scrape_adds_the_cluster_label_rays_dashboards_filter_on() -> None:
    """Ray's panels filter on `ray_io_cluster=~"$Cluster"` and fill $Cluster from that label's
    values; KubeRay's own PodMonitors copy it from the pods' `ray.io/cluster` label (kuberay
    config/prometheus/podMonitor.yaml, v1.7.0), and so does the program's."""
    assert "ray_io_cluster" in set(_served_ray_labels("2.46.0"))
    assert "ray_io_cluster" in SCRAPE_LABELS


def _served_metrics(version: str) -> set[str]:
    return {m for query in _served_ray_queries(version) for m in selected_metrics(query)}


def _metric_declared(metric: str, python: str, compiled: bytes) -> bool:
    """Whether Ray declares `metric` under the name it is served by: the exporter adds the `ray_`
    namespace and, for counters and histograms, Prometheus' suffixes; the autoscaler's metrics
    are declared with `namespace="autoscaler"` (autoscaler/_private/prom_metrics.py); Train's as
    dataclass fields (train/v2/_internal/callbacks/metrics.py); the core's as C++ strings."""
    name = metric.removeprefix("ray_")
    candidates = {name}
    for suffix in ("_bucket", "_count", "_sum", "_total"):
        candidates.add(name.removesuffix(suffix))
    for candidate in candidates:
        if re.search(rf"[\"']{candidate}[\"']|^\s*{candidate}\s*:", python, re.M):
            return True
        if b"\0" + candidate.encode() + b"\0" in compiled:
            return True
        for cut in (i for i, c in enumerate(candidate) if c == "_"):
            namespace, short = candidate[:cut], candidate[cut + 1 :]
            composed = rf"[\"']{short}[\"'].{{0,400}}?namespace=[\"']{namespace}[\"']"
            if re.search(composed, python, re.S):
                return True
    return False


@pytest.mark.parametrize("version", ["2.46.0", "2.48.0"])
def test_every_metric_a_served_ray_panel_queries_is_one_the_pods_ray_exports(version) -> None:
    """A panel of a newer Ray's dashboard can query a metric the pods' Ray never exports (Ray
    2.60's `ray_node_mem_used_host`, `ray_component_rss_bytes`, `ray_node_gpu_power_milliwatts`
    are not in 2.46 or 2.48) and stays empty. Every metric served to pods of Ray `version` is
    declared by that Ray: in its Python package (the reporter agent's gauges, the autoscaler's,
    Train's metrics) or its compiled core (the raylet's and the GCS's metric definitions)."""
    python, compiled = _pinned_ray_declarations(version)
    served = _served_metrics(version)
    assert len(served) > 20  # the default dashboard's panels were read
    missing = {m for m in served if not _metric_declared(m, python, compiled)}
    assert missing == set(), f"metrics Ray {version} never exports: {sorted(missing)}"


def test_a_metric_or_label_only_rays_own_panels_name_is_not_declared() -> None:
    """The checks above read declarations, not the dashboards' own queries: a name found only in
    a panel's query, or only inside a longer name, does not count."""
    python = 'Gauge("node_cpu_count", labelnames=("Component",))\nexpr="sum(fake_metric) by (X)"'
    compiled = b"\0raylet_fake_total\0IsRetry\0"
    assert _metric_declared("ray_node_cpu_count", python, compiled)
    assert _metric_declared("ray_raylet_fake_total", python, compiled)
    assert not _metric_declared("ray_fake_total", python, compiled)
    assert not _metric_declared("ray_fake_metric", python, compiled)
    assert not _metric_declared("ray_cpu_count", python, compiled)
    assert _label_declared("Component", python, compiled)
    assert _label_declared("IsRetry", python, compiled)
    assert not _label_declared("X", python, compiled)
    assert not _label_declared("Retry", python, compiled)


@pytest.mark.parametrize("version", ["2.46.0", "2.48.0"])
def test_the_kept_dashboards_are_what_the_pinned_ray_writes(version, tmp_path) -> None:
    """The dashboards the program serves are the pinned Ray's own, generated by its factory in
    its own venv (tools/ray_dashboards.py): a kept file edited by hand, or a pinned Ray whose
    factory writes something else, fails here; `make ray-dashboards` writes them again."""
    venv = pinned_ray_venv(version)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    result = subprocess.run(
        [str(venv / "bin/python"), "tools/ray_dashboards.py", "--out", str(tmp_path)],
        cwd=Path(__file__).parents[3],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    written = {p.name: p.read_text() for p in (tmp_path / version).glob("*.json")}
    kept = {p.name: p.read_text() for p in (RAY_GRAFANA_DIR / version).glob("*.json")}
    assert set(written) == {"rayDefaultDashboard.json", "rayTrainDashboard.json"}
    assert written == kept


def test_a_dashboard_is_kept_for_each_frameworks_ray_and_each_image_ray_venv() -> None:
    from components.catalogue import FRAMEWORKS

    makefile = (Path(__file__).parents[3] / "Makefile").read_text()
    venvs = re.search(r"^IMAGE_RAY_VERSIONS := (.+)$", makefile, re.M)
    assert venvs is not None
    assert set(ray_versions()) == set(venvs.group(1).split())
    assert {f.ray_version for f in FRAMEWORKS.values()} <= set(ray_versions())


def test_a_ray_without_kept_dashboards_is_refused_by_version() -> None:
    with pytest.raises(
        ValueError, match=r"no Ray dashboards kept for Ray '2\.99\.0'.*make ray-dashboards"
    ):
        grafana.dashboards("2.99.0")


def test_the_stack_serves_the_dashboards_of_its_frameworks_ray() -> None:
    """The framework picks the pods' Ray, and with it the panels Grafana gets."""
    from components.catalogue import FRAMEWORKS

    nemo = {"nemo-rl": FRAMEWORKS["nemo-rl"].ray_version, "verl": FRAMEWORKS["verl"].ray_version}
    assert nemo == {"nemo-rl": "2.46.0", "verl": "2.48.0"}
    older = grafana.dashboards("2.46.0")["rayTrainDashboard.json"]
    newer = grafana.dashboards("2.48.0")["rayTrainDashboard.json"]
    assert "ray_train_run_id" not in older and "ray_train_run_id" in newer
