"""PSA + Managed Lustre: ordering on the peering, port-988 mode, LNet-only firewall, data protection."""

from __future__ import annotations

import pytest

from components.gcp.lustre import (
    LUSTRE_GKE_SUPPORT_ENABLED,
    ManagedLustre,
    ManagedLustreArgs,
    PrivateServiceAccess,
    PrivateServiceAccessArgs,
)
from components.gcp.network import Network, NetworkArgs
from tools.render import render_with

INSTANCE = "gcp:lustre/instance:Instance"
CONNECTION = "gcp:servicenetworking/connection:Connection"


def _render(config):
    def build() -> None:
        network = Network("net", NetworkArgs.for_stack(config))
        psa = PrivateServiceAccess(
            "psa", PrivateServiceAccessArgs.for_stack(config, network.main_network)
        )
        ManagedLustre("lustre", ManagedLustreArgs.for_stack(config, network.main_network, psa))

    return render_with(build, {})


def test_instance_waits_for_the_service_networking_connection(config) -> None:
    rendering = _render(config)
    instance = rendering.one(INSTANCE)
    assert rendering.one(CONNECTION).urn in instance.dependencies


def test_instance_matches_config_in_the_gpu_zone_on_port_988(config) -> None:
    inputs = _render(config).one(INSTANCE).inputs
    assert inputs["location"] == "us-east1-b"
    assert inputs["capacityGib"] == "9000" and inputs["perUnitStorageThroughput"] == "1000"
    assert inputs["filesystem"] == "lustrefs"
    assert inputs["instanceId"] == "rl-test-lustre"
    assert inputs["gkeSupportEnabled"] is LUSTRE_GKE_SUPPORT_ENABLED is False
    assert inputs["network"] == "projects/example-project/global/networks/rl-test-net"


def test_firewall_opens_only_the_lnet_port_only_from_the_psa_range(config) -> None:
    rendering = _render(config)
    firewall = rendering.one("gcp:compute/firewall:Firewall", "lnet").inputs
    assert firewall["sourceRanges"] == ["10.16.0.0/20"]
    assert firewall["allows"] == [{"protocol": "tcp", "ports": ["988"]}]
    psa = rendering.one("gcp:compute/globalAddress:GlobalAddress").inputs
    assert (psa["purpose"], psa["address"], psa["prefixLength"]) == ("VPC_PEERING", "10.16.0.0", 20)


@pytest.mark.parametrize("protect", [True, False])
def test_protect_keeps_the_instance_and_its_peering_through_destroy(config, protect: bool) -> None:
    config = config.model_copy(
        update={"lustre": config.lustre.model_copy(update={"protect": protect})}
    )
    rendering = _render(config)
    instance = rendering.one(INSTANCE)
    assert (instance.protect, instance.retain_on_delete) == (protect, protect)
    assert instance.inputs["labels"]["rl-on-gke-protect"] == str(protect).lower()
    for kept in (
        rendering.one(CONNECTION),
        rendering.one("gcp:compute/globalAddress:GlobalAddress"),
    ):
        assert kept.retain_on_delete is protect


@pytest.mark.parametrize(("protect", "policy"), [(False, "REMOVE_PEERING"), (True, "ABANDON")])
def test_an_unprotected_peering_is_removed_on_destroy(config, protect: bool, policy: str) -> None:
    """With `deletion_policy: ABANDON` the connection only left the state and the
    peering stayed, and a network with a peering cannot be deleted (magic-modules#18476), so
    `pulumi destroy` of an unprotected stack stopped at the main VPC. pulumi-gcp 10.2's
    REMOVE_PEERING deletes the connection and, when the producer still holds it, removes the VPC
    peering itself. A protected peering is retained on delete and keeps ABANDON."""
    config = config.model_copy(
        update={"lustre": config.lustre.model_copy(update={"protect": protect})}
    )
    assert _render(config).one(CONNECTION).inputs["deletionPolicy"] == policy
