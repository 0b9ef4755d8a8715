"""The gVisor CPU pool args, checked against the pulumi-gcp 10.2 SDK types they feed."""

from __future__ import annotations

import warnings

import pulumi_gcp as gcp
import pytest

from components.gcp.sandbox_pool import sandbox_pool_args
from components.k8s import sandbox


def args(**kw: object) -> dict:
    settings = {"node_count": 1, "machine_type": "n2-standard-8", **kw}
    return sandbox_pool_args(
        "example-project",
        "us-east1",
        ["us-east1-b"],
        "cluster-id",
        "sa@example.iam.gserviceaccount.com",
        **settings,
    )


def test_pool_has_gke_sandbox_gvisor_in_the_sdks_current_field() -> None:
    node_config = args()["node_config"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the deprecated `sandbox_type` would warn
        gcp.container.NodePoolNodeConfigSandboxConfigArgs(**node_config["sandbox_config"])
    assert node_config["sandbox_config"] == {"type": "GVISOR"}
    assert node_config["image_type"] == "COS_CONTAINERD"  # GKE Sandbox needs containerd on COS


def test_every_key_is_a_node_pool_argument() -> None:
    a = args(node_count=2, machine_type="n2-standard-16")
    gcp.container.NodePoolNodeConfigArgs(**a["node_config"])  # an unknown key is a TypeError
    gcp.container.NodePoolArgs(**a)
    assert a["node_count"] == 2 and a["node_config"]["machine_type"] == "n2-standard-16"


def test_pool_label_is_what_the_service_selects() -> None:
    labels = args()["node_config"]["labels"]
    assert labels[sandbox.POOL_ROLE_LABEL] == sandbox.POOL_ROLE


def test_empty_pool_is_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match="rewards.codeSandbox.nodeCount: 0"):
        args(node_count=0)


def test_pool_upgrades_in_place_like_the_other_pools_and_consumes_no_reservation() -> None:
    from components.gcp.cluster import IN_PLACE_UPGRADE

    a = args()
    assert (
        a["upgrade_settings"]
        == IN_PLACE_UPGRADE
        == {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}
    )
    gcp.container.NodePoolUpgradeSettingsArgs(**a["upgrade_settings"])
    assert a["node_config"]["reservation_affinity"] == {
        "consume_reservation_type": "NO_RESERVATION"
    }
