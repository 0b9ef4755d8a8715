"""PodMonitoring: selects exactly this stack's Ray pods and scrapes the port they name `metrics`."""

from __future__ import annotations

from components.k8s.metrics import pod_monitoring_manifest
from components.k8s.names import K8sNames
from components.k8s.raycluster import RayClusterInputs, ray_cluster_manifest


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
