"""Pulumi and Ray's autoscaler both write the RayCluster: no conflict, and no `replicas` reset under live pods.

Held to server-side apply's documented ownership rules and the list types of the real KubeRay
v1.7.0 CRD (tests/components/k8s/ssa.py cites each rule), since no API server runs here.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.catalogue import FRAMEWORKS
from components.k8s.names import K8sNames
from components.k8s.raycluster import (
    PATCH_FORCE_ANNOTATION,
    SPEC_HASH_ANNOTATION,
    RayClusterInputs,
    ray_cluster_manifest,
)
from tests.components.k8s.conftest import make_config
from tests.components.k8s.ssa import Conflict, LiveObject, crd_schema, render

CRD = Path(__file__).parents[2] / "schemas" / "kuberay-v1.7.0" / "ray.io_rayclusters.yaml"
SCHEMA = crd_schema(yaml.safe_load(CRD.read_text()), "v1")
# pulumi-kubernetes names its manager `pulumi-kubernetes-<random>` per resource
# (provider/pkg/provider/provider.go, `prefix := "pulumi-kubernetes-"`).
PULUMI = "pulumi-kubernetes-8c1f"
# Ray's autoscaler PATCHes with a JSON patch (Ray 2.46 autoscaler/_private/kuberay/
# node_provider.py L152-160; v2: cloud_provider.py `_submit_scale_request`): an update, not an
# apply, under the client's default manager name.
AUTOSCALER = "python-requests"


def _inputs(**changes: Any) -> RayClusterInputs:
    config = make_config(scaling="on-demand", node_count=4)
    inputs = RayClusterInputs.for_stack(config, K8sNames.for_stack(config), system_pool_name="sys")
    return replace(inputs, **changes)


def _force(manifest: dict[str, Any]) -> bool:
    """What pulumi-kubernetes decides (provider/pkg/await/await.go `patchForce`: the annotation)."""
    annotations = manifest["metadata"].get("annotations", {})
    return bool(annotations.get(PATCH_FORCE_ANNOTATION) == "true")


def _autoscaler_scales_to(live: LiveObject, replicas: int, delete: list[str]) -> None:
    scaled = copy.deepcopy(live.object)
    group = scaled["spec"]["workerGroupSpecs"][0]
    group["replicas"] = replicas
    group["scaleStrategy"] = {"workersToDelete": delete}
    live.update(scaled, AUTOSCALER)


def _head_annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["spec"]["headGroupSpec"]["template"]["metadata"].get("annotations", {}))


def test_the_real_crd_makes_the_worker_group_list_one_atomic_field() -> None:
    groups = SCHEMA["properties"]["spec"]["properties"]["workerGroupSpecs"]
    assert "x-kubernetes-list-type" not in groups  # so: atomic
    live = LiveObject(SCHEMA)
    live.apply(ray_cluster_manifest(_inputs()), PULUMI)
    _autoscaler_scales_to(live, 3, [])
    owned = {render(p) for p in live.managers[AUTOSCALER]}
    assert owned == {".spec.workerGroupSpecs"}
    assert not any(render(p).startswith(".spec.workerGroupSpecs") for p in live.managers[PULUMI])


CHANGES = {
    "idleMinutes": {"idle_timeout_s": 1800},
    "image": {"framework": FRAMEWORKS["verl"]},
    "nodeCount": {"worker_replicas": 6},
    "grafana on": {"metrics_env": ({"name": "RAY_GRAFANA_HOST", "value": "http://g:3000"},)},
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_an_up_after_the_autoscaler_acted_applies_without_conflict_and_restarts_what_it_resets(
    change: str,
) -> None:
    before = ray_cluster_manifest(_inputs())
    after = ray_cluster_manifest(_inputs(**CHANGES[change]))
    live = LiveObject(SCHEMA)
    live.apply(before, PULUMI)  # the first up creates it
    _autoscaler_scales_to(live, 3, ["gpu-workers-x1"])
    head_before = _head_annotations(live.object)

    live.apply(after, PULUMI, force=_force(after))  # the next up: no Conflict raised

    obj = live.object
    group = obj["spec"]["workerGroupSpecs"][0]
    assert group["maxReplicas"] == after["spec"]["workerGroupSpecs"][0]["maxReplicas"]
    if group["replicas"] != 3 or group.get("scaleStrategy") != {
        "workersToDelete": ["gpu-workers-x1"]
    }:
        # The autoscaler's fields went back to the CRD's defaults: only with every pod recreated
        # (upgradeStrategy Recreate, and a head template the spec hash covers changed).
        assert obj["spec"]["upgradeStrategy"] == {"type": "Recreate"}
        assert _head_annotations(obj)[SPEC_HASH_ANNOTATION] != head_before[SPEC_HASH_ANNOTATION]
    # Pulumi owns its fields again, so the autoscaler's next write is an update that succeeds.
    assert any(render(p) == ".spec.workerGroupSpecs" for p in live.managers[PULUMI])


def test_without_force_the_autoscalers_write_makes_the_next_up_conflict() -> None:
    """Without force, the `up` after an autoscaler write is refused over the worker list."""
    live = LiveObject(SCHEMA)
    live.apply(ray_cluster_manifest(_inputs()), PULUMI)
    _autoscaler_scales_to(live, 3, [])
    with pytest.raises(Conflict) as refused:
        live.apply(ray_cluster_manifest(_inputs(idle_timeout_s=1800)), PULUMI, force=False)
    assert {render(p) for p in refused.value.paths} == {".spec.workerGroupSpecs"}
    assert refused.value.owners == {AUTOSCALER}


def test_static_workers_keep_the_count_pulumi_applies() -> None:
    config = make_config(scaling="static", node_count=2)
    inputs = RayClusterInputs.for_stack(config, K8sNames.for_stack(config), system_pool_name="s")
    live = LiveObject(SCHEMA)
    live.apply(ray_cluster_manifest(inputs), PULUMI)
    live.apply(ray_cluster_manifest(replace(inputs, worker_replicas=4)), PULUMI)
    assert live.object["spec"]["workerGroupSpecs"][0]["replicas"] == 4
    assert SPEC_HASH_ANNOTATION not in _head_annotations(live.object)
