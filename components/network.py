"""The three VPCs a GPU node needs: main (nodes, pods, NAT), gVNIC (second CPU NIC), RDMA (RoCE).

Builders return provider arguments as plain dicts and are tested without the engine; the
`Network` component only wires them. Cluster-toolkit's gke-a4 / gke-a3-ultragpu blueprints and
the GKE "custom AI-optimized cluster" guide are the sources of the shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig

# Jumbo frames: Managed Lustre docs measure ~10% more throughput at 8896, and 8896 is the
# RDMA network profile's required MTU (RDMA network profiles doc).
JUMBO_MTU = 8896
PODS_RANGE_NAME = "pods"
SERVICES_RANGE_NAME = "services"


def rdma_profile(config: StackConfig) -> str:
    """The zone's RoCE network profile; bare-metal machines would need `-vpc-roce-metal`."""
    return f"projects/{config.project}/global/networkProfiles/{config.zone}-vpc-roce"


def vpc_args(config: StackConfig, name: str, network_profile: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": name,
        "project": config.project,
        "auto_create_subnetworks": False,
        "mtu": JUMBO_MTU,
        "routing_mode": "REGIONAL",
    }
    if network_profile:
        args["network_profile"] = network_profile
    return args


def main_subnet_args(config: StackConfig, network: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "name": f"{config.name_prefix}-sub",
        "project": config.project,
        "region": config.region,
        "network": network,
        "ip_cidr_range": config.network.main_subnet_cidr,
        # Private nodes reach Google APIs (Artifact Registry, GCS) without public IPs.
        "private_ip_google_access": True,
        "secondary_ip_ranges": [
            {"range_name": PODS_RANGE_NAME, "ip_cidr_range": config.network.pods_cidr},
            {"range_name": SERVICES_RANGE_NAME, "ip_cidr_range": config.network.services_cidr},
        ],
    }


def internal_firewall_args(
    name: str, config: StackConfig, network: pulumi.Input[str], source_ranges: list[str]
) -> dict[str, Any]:
    return {
        "name": name,
        "project": config.project,
        "network": network,
        "direction": "INGRESS",
        "source_ranges": source_ranges,
        "allows": [
            {"protocol": "tcp", "ports": ["0-65535"]},
            {"protocol": "udp", "ports": ["0-65535"]},
            {"protocol": "icmp"},
        ],
    }


def gvnic_subnet_args(config: StackConfig, network: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "name": f"{config.name_prefix}-gvnic-sub",
        "project": config.project,
        "region": config.region,
        "network": network,
        "ip_cidr_range": config.network.gvnic_subnet_cidr,
    }


def rdma_subnet_args(config: StackConfig, network: pulumi.Input[str]) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{config.name_prefix}-rdma-sub-{index}",
            "project": config.project,
            "region": config.region,
            "network": network,
            "ip_cidr_range": cidr,
        }
        for index, cidr in enumerate(config.network.rdma_subnet_cidrs())
    ]


def nat_args(config: StackConfig, router: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "name": f"{config.name_prefix}-nat",
        "project": config.project,
        "region": config.region,
        "router": router,
        "nat_ip_allocate_option": "AUTO_ONLY",
        "source_subnetwork_ip_ranges_to_nat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
        "log_config": {"enable": True, "filter": "ERRORS_ONLY"},
    }


@dataclass(frozen=True)
class GpuNics:
    """The networks a GPU node's extra NICs attach to, by name, in NIC order: the gVNIC first,
    then RDMA 0..7. The GPU pool attaches them; the Kubernetes layer names them for pods."""

    gvnic_network: pulumi.Input[str]
    gvnic_subnet: pulumi.Input[str]
    rdma_network: pulumi.Input[str]
    rdma_subnets: tuple[pulumi.Input[str], ...]


@dataclass(frozen=True)
class NetworkArgs:
    config: StackConfig


class Network(pulumi.ComponentResource):
    """Main, gVNIC and RDMA VPCs with their subnets, NAT and firewalls."""

    main_network: gcp.compute.Network
    main_subnet: gcp.compute.Subnetwork
    gvnic_network: gcp.compute.Network
    gvnic_subnet: gcp.compute.Subnetwork
    rdma_network: gcp.compute.Network
    rdma_subnets: list[gcp.compute.Subnetwork]
    gpu_nics: GpuNics

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("rl-on-gke:gcp:Network", name, None, opts)
        config = args.config
        child = pulumi.ResourceOptions(parent=self)

        # The main VPC carries the Lustre peering: when the data is protected it must outlive
        # `pulumi destroy` too, or the retained instance would be cut off (see lustre.py).
        self.main_network = gcp.compute.Network(
            f"{name}-main",
            **vpc_args(config, f"{config.name_prefix}-net"),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=config.lustre.protect),
        )
        self.main_subnet = gcp.compute.Subnetwork(
            f"{name}-main-sub", **main_subnet_args(config, self.main_network.id), opts=child
        )
        gcp.compute.Firewall(
            f"{name}-main-internal",
            **internal_firewall_args(
                f"{config.name_prefix}-net-internal",
                config,
                self.main_network.name,
                [config.network.main_subnet_cidr, config.network.pods_cidr],
            ),
            opts=child,
        )
        # Nodes have no public IPs; NAT is their only way to pull public images (nvcr.io, Docker Hub).
        router = gcp.compute.Router(
            f"{name}-router",
            name=f"{config.name_prefix}-router",
            project=config.project,
            region=config.region,
            network=self.main_network.id,
            opts=child,
        )
        gcp.compute.RouterNat(f"{name}-nat", **nat_args(config, router.name), opts=child)

        self.gvnic_network = gcp.compute.Network(
            f"{name}-gvnic", **vpc_args(config, f"{config.name_prefix}-gvnic-net"), opts=child
        )
        self.gvnic_subnet = gcp.compute.Subnetwork(
            f"{name}-gvnic-sub", **gvnic_subnet_args(config, self.gvnic_network.id), opts=child
        )
        gcp.compute.Firewall(
            f"{name}-gvnic-internal",
            **internal_firewall_args(
                f"{config.name_prefix}-gvnic-internal",
                config,
                self.gvnic_network.name,
                [config.network.gvnic_subnet_cidr],
            ),
            opts=child,
        )

        # No firewall rules on a RoCE network: the profile has its own implicit rules and
        # cluster-toolkit's vpc module refuses firewall rules on `*roce*` profiles.
        self.rdma_network = gcp.compute.Network(
            f"{name}-rdma",
            **vpc_args(config, f"{config.name_prefix}-rdma-net", rdma_profile(config)),
            opts=child,
        )
        self.rdma_subnets = [
            gcp.compute.Subnetwork(f"{name}-rdma-sub-{index}", **subnet, opts=child)
            for index, subnet in enumerate(rdma_subnet_args(config, self.rdma_network.id))
        ]

        self.gpu_nics = GpuNics(
            gvnic_network=self.gvnic_network.name,
            gvnic_subnet=self.gvnic_subnet.name,
            rdma_network=self.rdma_network.name,
            rdma_subnets=tuple(subnet.name for subnet in self.rdma_subnets),
        )
        self.register_outputs(
            {
                "mainNetwork": self.main_network.name,
                "gvnicNetwork": self.gvnic_network.name,
                "rdmaNetwork": self.rdma_network.name,
                "rdmaSubnets": [s.name for s in self.rdma_subnets],
            }
        )
