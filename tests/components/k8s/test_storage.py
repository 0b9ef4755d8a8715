"""Lustre PV/PVC: the CSI handle and attributes the driver parses, and a two-way static binding."""

from __future__ import annotations

from components.k8s.storage import (
    CSI_DRIVER,
    persistent_volume_claim_manifest,
    persistent_volume_manifest,
    volume_handle,
)
from tests.components.k8s.manifests import validate_core


def _pv(**overrides):
    args = dict(
        handle=volume_handle("example-project", "us-east1-b", "rl-test-lustre"),
        ip="10.16.0.2",
        filesystem="lustrefs",
        capacity_gib=9000,
    )
    args.update(overrides)
    return persistent_volume_manifest("rl-test-lustre-pv", **args)


def _pvc():
    return persistent_volume_claim_manifest(
        "rl-test-lustre-pvc", namespace="rl-train", volume_name="rl-test-lustre-pv"
    )


def test_volume_handle_has_exactly_three_parts() -> None:
    handle = volume_handle("example-project", "us-east1-b", "rl-test-lustre")
    assert handle.split("/") == ["example-project", "us-east1-b", "rl-test-lustre"]


def test_volume_handle_accepts_the_instances_full_resource_id() -> None:
    full = "projects/example-project/locations/us-east1-b/instances/rl-test-lustre"
    assert (
        volume_handle("example-project", "us-east1-b", full)
        == "example-project/us-east1-b/rl-test-lustre"
    )


def test_pv_uses_the_lustre_csi_driver_with_ip_and_filesystem() -> None:
    csi = _pv()["spec"]["csi"]
    assert csi["driver"] == CSI_DRIVER == "lustre.csi.storage.gke.io"
    assert len(csi["volumeHandle"].split("/")) == 3
    assert csi["volumeAttributes"] == {"ip": "10.16.0.2", "filesystem": "lustrefs"}


def test_pv_matches_instance_capacity_is_shared_and_kept() -> None:
    spec = _pv()["spec"]
    assert spec["capacity"] == {"storage": "9000Gi"}
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["storageClassName"] == ""


def test_the_claim_binds_by_volume_name_and_the_volume_leaves_claim_ref_to_the_controller() -> None:
    # After binding kube-controller-manager owns the (atomic) claimRef; a uid-less one set here
    # would make every server-side apply of a new capacity conflict.
    pv, pvc = _pv(), _pvc()
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert "claimRef" not in pv["spec"]
    assert pvc["spec"]["storageClassName"] == "" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    # The claim asks for a fixed small size so growing the instance never needs a claim resize.
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert pv["spec"]["capacity"]["storage"] == "9000Gi"


def test_pv_and_pvc_are_valid_kubernetes_objects() -> None:
    validate_core(_pv())
    validate_core(_pvc())
