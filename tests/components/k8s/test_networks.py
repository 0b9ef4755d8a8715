"""Device networks: nine named pairs over the right VPCs, and the pod annotation that uses them."""

from __future__ import annotations

import json

import pytest

from components.k8s.networks import (
    GVNIC_NETWORK,
    RDMA_NETWORKS,
    device_networks,
    network_manifest,
    param_set_manifest,
    pod_network_annotations,
)
from tests.components.k8s.manifests import validate_custom

RDMA_SUBNETS = [f"p-rdma-sub-{i}" for i in range(8)]


def _networks():
    return device_networks("p-gvnic-net", "p-gvnic-sub", "p-rdma-net", RDMA_SUBNETS)


def test_gvnic_param_set_names_its_vpc_and_subnet_in_net_device_mode() -> None:
    gvnic = param_set_manifest(_networks()[0])
    assert gvnic["metadata"] == {"name": "gvnic-1"}
    assert gvnic["spec"] == {
        "vpc": "p-gvnic-net",
        "vpcSubnet": "p-gvnic-sub",
        "deviceMode": "NetDevice",
    }


def test_rdma_param_sets_name_the_eight_rdma_subnets_in_order() -> None:
    rdma = [param_set_manifest(n) for n in _networks()[1:]]
    assert [p["metadata"]["name"] for p in rdma] == [f"rdma-{i}" for i in range(8)]
    assert [p["spec"]["vpcSubnet"] for p in rdma] == RDMA_SUBNETS
    assert {p["spec"]["vpc"] for p in rdma} == {"p-rdma-net"}
    assert {p["spec"]["deviceMode"] for p in rdma} == {"RDMA"}


def test_each_network_is_a_cluster_scoped_device_network_pointing_at_its_param_set() -> None:
    for network in _networks():
        manifest = network_manifest(network)
        assert "namespace" not in manifest["metadata"]
        assert manifest["spec"] == {
            "type": "Device",
            "parametersRef": {
                "group": "networking.gke.io",
                "kind": "GKENetworkParamSet",
                "name": network.name,
            },
        }


def test_anything_but_eight_rdma_subnets_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 8 RDMA subnets"):
        device_networks("g", "s", "r", RDMA_SUBNETS[:7])


def test_pod_annotation_asks_for_all_ten_interfaces_in_nic_order() -> None:
    annotations = pod_network_annotations()
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert interfaces == [
        {"interfaceName": f"eth{i}", "network": network}
        for i, network in enumerate(["default", GVNIC_NETWORK, *RDMA_NETWORKS])
    ]


def test_annotation_only_names_networks_this_module_creates() -> None:
    created = {n.name for n in _networks()}
    requested = {
        i["network"] for i in json.loads(pod_network_annotations()["networking.gke.io/interfaces"])
    }
    assert requested - created == {"default"}


def test_every_pair_matches_the_gke_networking_crds() -> None:
    for network in _networks():
        validate_custom(param_set_manifest(network))
        validate_custom(network_manifest(network))
