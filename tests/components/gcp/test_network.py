"""The Network component: three VPCs, RDMA on the zone's RoCE profile with 8 subnets, no RDMA firewall."""

from __future__ import annotations

from components.gcp.network import (
    JUMBO_MTU,
    Network,
    NetworkArgs,
    internal_vpcs,
    rdma_subnet_args,
)
from tools.render import render_with

NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"


def _render(config):
    return render_with(lambda: Network("net", NetworkArgs.for_stack(config)), {})


def test_three_vpcs_with_jumbo_frames_and_only_rdma_on_the_roce_profile(config) -> None:
    rendering = _render(config)
    networks = {r.inputs["name"]: r.inputs for r in rendering.of_type(NETWORK)}
    assert set(networks) == {"rl-test-net", "rl-test-gvnic-net", "rl-test-rdma-net"}
    assert all(
        n["mtu"] == JUMBO_MTU and n["autoCreateSubnetworks"] is False for n in networks.values()
    )
    assert networks["rl-test-rdma-net"]["networkProfile"] == (
        "projects/example-project/global/networkProfiles/us-east1-b-vpc-roce"
    )
    assert "networkProfile" not in networks["rl-test-net"]
    assert "networkProfile" not in networks["rl-test-gvnic-net"]


def test_rdma_vpc_has_exactly_eight_subnets_and_no_firewall(config) -> None:
    rendering = _render(config)
    rdma_subnets = [
        r for r in rendering.of_type(SUBNET) if r.inputs["network"].endswith("/rl-test-rdma-net")
    ]
    assert sorted(s.inputs["name"] for s in rdma_subnets) == [
        f"rl-test-rdma-sub-{i}" for i in range(8)
    ]
    assert {s.inputs["region"] for s in rdma_subnets} == {"us-east1"}
    firewalled = {r.inputs["network"] for r in rendering.of_type(FIREWALL)}
    assert firewalled == {"rl-test-net", "rl-test-gvnic-net"}


def test_main_and_gvnic_firewalls_admit_their_own_ranges_only(config) -> None:
    vpcs = internal_vpcs(NetworkArgs.for_stack(config))
    assert {key: (v.network, v.firewall) for key, v in vpcs.items()} == {
        "main": ("rl-test-net", "rl-test-net-internal"),
        "gvnic": ("rl-test-gvnic-net", "rl-test-gvnic-internal"),
    }
    rendering = _render(config)
    rules = {r.inputs["name"]: r.inputs["sourceRanges"] for r in rendering.of_type(FIREWALL)}
    assert rules == {v.firewall: v.source_ranges for v in vpcs.values()}
    assert vpcs["main"].source_ranges == ["192.168.0.0/18", "10.4.0.0/14"]


def test_main_subnet_carries_named_pod_and_service_ranges(config) -> None:
    main = _render(config).one(SUBNET, "main-sub").inputs
    assert main["ipCidrRange"] == "192.168.0.0/18"
    assert main["privateIpGoogleAccess"] is True
    assert {r["rangeName"]: r["ipCidrRange"] for r in main["secondaryIpRanges"]} == {
        "pods": "10.4.0.0/14",
        "services": "10.0.32.0/20",
    }


def test_private_nodes_get_nat_through_a_cloud_router(config) -> None:
    rendering = _render(config)
    nat = rendering.one("gcp:compute/routerNat:RouterNat").inputs
    assert nat["router"] == rendering.one("gcp:compute/router:Router").inputs["name"]
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"


def test_every_child_is_parented_to_the_component(config) -> None:
    rendering = _render(config)
    component = rendering.one("rl-on-gke:gcp:Network")
    assert all(r.parent == component.urn for r in rendering.custom_resources())


def test_main_vpc_outlives_destroy_only_when_the_data_is_protected(config) -> None:
    assert _render(config).one(NETWORK, "main").retain_on_delete is False
    protected = config.model_copy(
        update={"lustre": config.lustre.model_copy(update={"protect": True})}
    )
    assert _render(protected).one(NETWORK, "main").retain_on_delete is True


def test_rdma_subnets_follow_a_custom_range(config) -> None:
    custom = config.model_copy(
        update={"network": config.network.model_copy(update={"rdma_cidr": "172.20.0.0/16"})}
    )
    cidrs = [s["ip_cidr_range"] for s in rdma_subnet_args(NetworkArgs.for_stack(custom), "net")]
    assert cidrs[0] == "172.20.0.0/19" and cidrs[7] == "172.20.224.0/19"
