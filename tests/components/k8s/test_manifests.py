"""The validation helpers themselves: they must reject broken manifests, not just pass good ones."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from components.k8s.names import K8sNames
from components.k8s.networks import device_networks, network_manifest, param_set_manifest
from components.k8s.raycluster import RayClusterInputs, ray_cluster_manifest
from components.k8s.storage import persistent_volume_manifest
from tests.components.k8s.manifests import (
    ApiServerRuleError,
    crd_schema,
    require_schemas_dir,
    validate_core,
    validate_custom,
)


def _ray_cluster(config) -> dict:
    inputs = RayClusterInputs.for_stack(
        config, K8sNames.for_stack(config), system_pool_name="system"
    )
    return ray_cluster_manifest(inputs)


def _pv() -> dict:
    return persistent_volume_manifest(
        "pv",
        handle="p/z/i",
        ip="10.0.0.2",
        filesystem="lustrefs",
        capacity_gib=9000,
    )


def test_a_good_ray_cluster_passes_and_string_replicas_fail(k8s_config) -> None:
    manifest = _ray_cluster(k8s_config)
    validate_custom(manifest)
    manifest["spec"]["workerGroupSpecs"][0]["replicas"] = "two"
    with pytest.raises(jsonschema.ValidationError, match="'two' is not of type 'integer'"):
        validate_custom(manifest)


def test_a_misspelt_ray_cluster_field_fails_instead_of_being_pruned(k8s_config) -> None:
    manifest = _ray_cluster(k8s_config)
    manifest["spec"]["headGroupSpec"]["rayStartParam"] = manifest["spec"]["headGroupSpec"].pop(
        "rayStartParams"
    )
    with pytest.raises(jsonschema.ValidationError, match="rayStartParam"):
        validate_custom(manifest)


def test_int_or_string_quantities_accept_both_and_reject_other_types(k8s_config) -> None:
    manifest = _ray_cluster(k8s_config)
    limits = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0][
        "resources"
    ]["limits"]
    limits["nvidia.com/gpu"] = 8
    validate_custom(manifest)
    limits["nvidia.com/gpu"] = ["8"]
    with pytest.raises(jsonschema.ValidationError):
        validate_custom(manifest)


def test_an_unknown_device_mode_fails_the_gke_networking_schema() -> None:
    network = device_networks("vpc", "sub", "rdma", [f"r{i}" for i in range(8)])[1]
    params = param_set_manifest(network)
    validate_custom(params)
    validate_custom(network_manifest(network))
    broken = copy.deepcopy(params)
    broken["spec"]["deviceMode"] = "SRIOV"
    with pytest.raises(jsonschema.ValidationError, match="SRIOV"):
        validate_custom(broken)


def test_a_persistent_volume_without_access_modes_fails_core_validation() -> None:
    manifest = _pv()
    validate_core(manifest)
    del manifest["spec"]["accessModes"]
    with pytest.raises(ApiServerRuleError, match="accessModes is required"):
        validate_core(manifest)


def test_access_modes_of_the_wrong_type_fail_the_schema() -> None:
    manifest = _pv()
    manifest["spec"]["accessModes"] = "ReadWriteMany"
    with pytest.raises(kubernetes_validate.ValidationError, match="not of type 'array'"):
        validate_core(manifest)


def test_unknown_core_fields_fail_in_strict_mode() -> None:
    manifest = _pv()
    manifest["spec"]["reclaimPolicy"] = "Retain"
    with pytest.raises(kubernetes_validate.ValidationError, match="reclaimPolicy"):
        validate_core(manifest)


def test_a_version_that_is_not_served_is_reported() -> None:
    with pytest.raises(LookupError, match="v9"):
        crd_schema("ray.io/v9", "RayCluster")


def test_missing_schemas_skip_locally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="tests/schemas"):
        require_schemas_dir(tmp_path / "absent")


def test_missing_schemas_fail_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must validate"):
        require_schemas_dir(tmp_path / "absent")
