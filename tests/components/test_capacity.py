"""Address ranges against node counts: refused before deploy, naming both keys and the prefix that fits."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.capacity import executor_pods_per_node, nodes_in_subnet, smallest_subnet_prefix
from components.config import ConfigError, parse_stack_config
from tests.conftest import raw_from_stack


def _problems(stack_config, nodes, network) -> list[str]:
    stack_config["rl-on-gke:gpu"]["nodeCount"] = nodes
    stack_config["rl-on-gke:network"] = network
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(stack_config))
    return caught.value.problems


@pytest.mark.parametrize(("prefix", "nodes"), [(29, 4), (26, 60), (21, 2044)])
def test_subnet_sizes_match_gcps_four_reserved_addresses(prefix, nodes) -> None:
    assert nodes_in_subnet(prefix) == nodes


@given(st.integers(min_value=0, max_value=5000))
def test_smallest_prefix_is_the_smallest_subnet_that_holds_the_nodes(nodes) -> None:
    prefix = smallest_subnet_prefix(nodes)
    assert nodes_in_subnet(prefix) >= nodes
    assert prefix == 29 or nodes_in_subnet(prefix + 1) < nodes


def test_rdma_range_too_small_for_the_node_count_names_both_keys_and_the_prefix(
    stack_config,
) -> None:
    problems = _problems(stack_config, 64, {"rdmaCidr": "192.168.128.0/26"})
    assert problems == [
        "rl-on-gke:network.rdmaCidr = '192.168.128.0/26': each of its 8 subnets (/29) holds 4 nodes (GCP "
        "reserves 4 addresses per subnet) but rl-on-gke:gpu.nodeCount is 64; use a /22 or larger"
    ]


def test_the_suggested_rdma_prefix_is_accepted(stack_config) -> None:
    stack_config["rl-on-gke:gpu"]["nodeCount"] = 64
    stack_config["rl-on-gke:network"] = {"rdmaCidr": "192.168.128.0/22"}
    config = parse_stack_config(raw_from_stack(stack_config))
    smallest = min(
        ipaddress.IPv4Network(c).num_addresses for c in config.network.rdma_subnet_cidrs()
    )
    assert smallest - 4 >= 64


def test_gvnic_subnet_too_small(stack_config) -> None:
    problems = _problems(stack_config, 8, {"gvnicSubnetCidr": "192.168.64.0/29"})
    assert problems[0].startswith("rl-on-gke:network.gvnicSubnetCidr = '192.168.64.0/29'")
    assert "rl-on-gke:gpu.nodeCount is 8; use a /28 or larger" in problems[0]


def test_main_subnet_counts_gpu_and_system_nodes(stack_config) -> None:
    stack_config["rl-on-gke:cluster"] = {"systemNodeCount": 2}
    problems = _problems(stack_config, 3, {"mainSubnetCidr": "192.168.0.0/29"})
    assert problems[0].startswith("rl-on-gke:network.mainSubnetCidr = '192.168.0.0/29'")
    assert (
        "rl-on-gke:gpu.nodeCount + rl-on-gke:cluster.systemNodeCount is 5; use a /28 or larger"
        in problems[0]
    )


def test_pods_range_gives_every_node_a_slash_24(stack_config) -> None:
    problems = _problems(stack_config, 8, {"podsCidr": "10.4.0.0/21"})
    assert problems == [
        "rl-on-gke:network.podsCidr = '10.4.0.0/21': gives 8 nodes a /24 each (110 pods per node) but "
        "rl-on-gke:gpu.nodeCount + rl-on-gke:cluster.systemNodeCount is 9; use a /20 or larger"
    ]


def test_main_subnet_counts_the_code_sandbox_nodes_when_enabled(stack_config) -> None:
    stack_config["rl-on-gke:rewards"] = {
        "codeSandbox": {"enabled": True, "image": "example/sandbox:1", "nodeCount": 2}
    }
    problems = _problems(stack_config, 2, {"mainSubnetCidr": "192.168.0.0/29"})
    assert problems[0].startswith("rl-on-gke:network.mainSubnetCidr = '192.168.0.0/29'")
    assert (
        "rl-on-gke:gpu.nodeCount + rl-on-gke:cluster.systemNodeCount + rl-on-gke:rewards.codeSandbox.nodeCount "
        "is 5; use a /28 or larger"
    ) in problems[0]
    # Off, the same ranges hold the same GPU and system nodes.
    stack_config["rl-on-gke:rewards"] = {"codeSandbox": {"enabled": False, "nodeCount": 2}}
    assert parse_stack_config(raw_from_stack(stack_config)).code_sandbox_nodes == 0


@pytest.mark.parametrize(
    ("vcpus", "memory_gb", "fits"), [(8, 32, 1), (4, 16, 0), (16, 64, 3), (8, 8, 0), (32, 128, 7)]
)
def test_executors_per_node_after_gke_reservations(vcpus: int, memory_gb: int, fits: int) -> None:
    # 8 vCPUs: 8 - 0.09 reserved - 0.5 daemons = 7.41 CPU -> one 4-CPU pod; 8 GB cannot hold 8 GiB.
    assert executor_pods_per_node(vcpus, memory_gb, 4, 8) == fits
