"""PodMonitoring: selects exactly this stack's Ray pods and scrapes the port they name `metrics`,
and on an autoscaled stack the head's autoscaler metrics."""

from __future__ import annotations

import re

import pytest

from components.k8s.metrics import (
    AUTOSCALER_METRICS_PORT,
    METRICS_PORT_NAME,
    autoscaler_pod_monitoring_manifest,
    autoscaler_pod_monitoring_name,
    pod_monitoring_manifest,
)
from components.k8s.names import K8sNames
from components.k8s.raycluster import RayClusterInputs, ray_cluster_manifest
from tests.components.k8s.conftest import make_config
from tests.components.k8s.fakes import render_layer
from tests.components.k8s.manifests import validate
from tests.components.k8s.pinned_ray import pinned_ray_package


def test_pod_monitoring_lives_in_the_training_namespace_and_selects_the_ray_cluster() -> None:
    manifest = pod_monitoring_manifest("rl-test-ray", "rl-train", "rl-test-ray")
    assert manifest["apiVersion"] == "monitoring.googleapis.com/v1"
    assert manifest["metadata"] == {"name": "rl-test-ray", "namespace": "rl-train"}
    assert manifest["spec"]["selector"] == {"matchLabels": {"ray.io/cluster": "rl-test-ray"}}


def test_scraped_port_is_named_on_every_ray_container(k8s_config) -> None:
    names = K8sNames.for_stack(k8s_config)
    monitoring = pod_monitoring_manifest(names.pod_monitoring, names.namespace, names.ray_cluster)
    (endpoint,) = monitoring["spec"]["endpoints"]
    cluster = ray_cluster_manifest(
        RayClusterInputs.for_stack(k8s_config, names, system_pool_name="system")
    )
    groups = [cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]]
    for group in groups:
        # KubeRay's Ray container is the first (the head pod also runs the re-armer sidecar).
        container = group["template"]["spec"]["containers"][0]
        assert endpoint["port"] in {p["name"] for p in container["ports"]}
    assert (
        monitoring["spec"]["selector"]["matchLabels"]["ray.io/cluster"]
        == cluster["metadata"]["name"]
    )


def test_every_pod_monitoring_validates_against_gmp_s_own_schema(k8s_config) -> None:
    names = K8sNames.for_stack(k8s_config)
    for manifest in (
        pod_monitoring_manifest(names.pod_monitoring, names.namespace, names.ray_cluster),
        autoscaler_pod_monitoring_manifest(
            autoscaler_pod_monitoring_name(names.pod_monitoring), names.namespace, names.ray_cluster
        ),
    ):
        validate(manifest)


def test_the_autoscaler_s_metrics_are_scraped_from_this_cluster_s_head_only() -> None:
    """Only the head runs Ray's autoscaler; a worker scraped on that port would be a target
    down for every GPU node."""
    manifest = autoscaler_pod_monitoring_manifest("m-autoscaler", "rl-train", "rl-test-ray")
    assert manifest["spec"]["selector"] == {
        "matchLabels": {"ray.io/cluster": "rl-test-ray", "ray.io/node-type": "head"}
    }
    (endpoint,) = manifest["spec"]["endpoints"]
    assert endpoint["port"] == AUTOSCALER_METRICS_PORT
    # Its series carry the labels Ray's panels filter on, as the Ray containers' do.
    plain = pod_monitoring_manifest("m", "rl-train", "rl-test-ray")
    assert manifest["spec"]["targetLabels"] == plain["spec"]["targetLabels"]


@pytest.mark.parametrize("version", ["2.46.0", "2.48.0"])
def test_the_scraped_autoscaler_port_is_the_one_the_pods_ray_serves_on(version) -> None:
    """Ray's autoscaler serves its metrics on AUTOSCALER_METRIC_PORT (default 44217), read here
    from the pinned Ray's own constants and monitor."""
    package = pinned_ray_package(version)
    constants = (package / "autoscaler/_private/constants.py").read_text()
    default = re.search(
        r'AUTOSCALER_METRIC_PORT = env_integer\("AUTOSCALER_METRIC_PORT", (\d+)\)', constants
    )
    assert default is not None and int(default.group(1)) == AUTOSCALER_METRICS_PORT
    monitor = (package / "autoscaler/v2/monitor.py").read_text()
    assert "start_http_server(\n                    port=AUTOSCALER_METRIC_PORT" in monitor


def _scraped_ports(config) -> list[str]:
    """The port of each PodMonitoring the layer registers for `config`."""
    rendering = render_layer(config).rendering
    kind = "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
    return sorted(str(r.inputs["spec"]["endpoints"][0]["port"]) for r in rendering.of_type(kind))


def test_an_autoscaled_stack_scrapes_its_autoscaler_and_a_static_one_does_not() -> None:
    autoscaled = make_config(provisioning="spot", scaling="on-demand")
    static = make_config(provisioning="spot", scaling="static")
    assert _scraped_ports(autoscaled) == [str(AUTOSCALER_METRICS_PORT), METRICS_PORT_NAME]
    assert _scraped_ports(static) == [METRICS_PORT_NAME]
