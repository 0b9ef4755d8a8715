"""Rules judge what is known during `pulumi preview` and neither crash nor guess on unknowns."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policy.props import UNKNOWN, dig, network_name, plain
from policy.rules import POLICIES

_OPTS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def _policy(name: str) -> Any:
    return next(p for p in POLICIES if p.name == name)


def _resource(type_: str, name: str, props: dict[str, Any]) -> PolicyResource:
    return PolicyResource(
        type_,
        unknown_checking_proxy(props),
        f"urn:pulumi:s::p::{type_}::{name}",
        name,
        _OPTS,
        None,
        None,
        [],
        {},
    )


def test_plain_replaces_unknowns_with_the_marker_instead_of_raising() -> None:
    props = unknown_checking_proxy(
        {"a": {"b": UNKNOWN_STRING_VALUE, "c": [1, UNKNOWN_STRING_VALUE]}}
    )
    assert plain(props) == {"a": {"b": UNKNOWN, "c": [1, UNKNOWN]}}
    assert dig(plain(props), "a", "b", "deeper") is UNKNOWN
    assert dig(plain(props), "a", "missing") is None


def test_network_name_accepts_name_id_and_self_link() -> None:
    for reference in (
        "net",
        "projects/p/global/networks/net",
        "https://www.googleapis.com/compute/v1/projects/p/global/networks/net",
    ):
        assert network_name(reference) == "net"
    assert network_name(UNKNOWN) is None


def test_node_pool_whose_service_account_is_not_known_yet_passes() -> None:
    # On a first preview the node SA's email is computed by GCP, so it is unknown; it comes from
    # a resource of this stack, hence cannot be the default compute SA.
    props = {"name": "gpu", "nodeConfig": {"serviceAccount": UNKNOWN_STRING_VALUE, "spot": False}}
    found: list[str] = []
    args = ResourceValidationArgs(
        "gcp:container/nodePool:NodePool",
        unknown_checking_proxy(props),
        "urn:x",
        "gpu",
        _OPTS,
        None,
    )
    _policy("gke-nodes-not-default-service-account").validate(
        args, lambda m, u=None: found.append(m)
    )
    assert found == []


def test_firewall_with_unknown_network_is_matched_to_the_rdma_vpc_through_its_property_dependency() -> (
    None
):
    rdma = _resource(
        "gcp:compute/network:Network",
        "rdma",
        {
            "name": "x-rdma-net",
            "networkProfile": "projects/p/global/networkProfiles/us-east1-b-vpc-roce",
        },
    )
    firewall = _resource(
        "gcp:compute/firewall:Firewall", "fw", {"name": "fw", "network": UNKNOWN_STRING_VALUE}
    )
    firewall.property_dependencies["network"] = [rdma]
    found: list[str] = []
    _policy("rdma-vpc-no-firewall").validate(
        StackValidationArgs([rdma, firewall]), lambda m, u=None: found.append(m)
    )
    assert len(found) == 1 and "x-rdma-net" in found[0]
