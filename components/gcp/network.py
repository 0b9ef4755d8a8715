"""The three VPCs a GPU node needs: main (nodes, pods, NAT), gVNIC (second CPU NIC), RDMA (RoCE).

Builders return provider arguments as plain dicts and are tested without the engine; the
`Network` component only wires them. Cluster-toolkit's gke-a4 / gke-a3-ultragpu blueprints and
the GKE "custom AI-optimized cluster" guide are the sources of the shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import NetworkSettings, StackConfig
from components.gcp.placement import placement

# Jumbo frames: Managed Lustre docs measure ~10% more throughput at 8896, and 8896 is the
# RDMA network profile's required MTU (RDMA network profiles doc).
JUMBO_MTU = 8896
PODS_RANGE_NAME = "pods"
SERVICES_RANGE_NAME = "services"


@dataclass(frozen=True)
class NetworkArgs:
    """What the networks read of the stack: where, the name prefix, the address plan and one
    fact about the data (`lustre.protect`), which keeps the main VPC past `pulumi destroy`."""

    project: str
    region: str
    zone: str
    name_prefix: str
    ranges: NetworkSettings
    # The main VPC carries the Lustre peering: when the data is protected it must outlive
    # `pulumi destroy` too, or the retained instance would be cut off (see lustre.py).
    keep_main_network: bool

    @classmethod
    def for_stack(cls, config: StackConfig) -> NetworkArgs:
        return cls(
            **placement(config),
            ranges=config.network,
            keep_main_network=config.lustre.protect,
        )


def rdma_profile(net: NetworkArgs) -> str:
    """The zone's RoCE network profile; bare-metal machines would need `-vpc-roce-metal`."""
    return f"projects/{net.project}/global/networkProfiles/{net.zone}-vpc-roce"


def vpc_args(net: NetworkArgs, name: str, network_profile: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": name,
        "project": net.project,
        "auto_create_subnetworks": False,
        "mtu": JUMBO_MTU,
        "routing_mode": "REGIONAL",
    }
    if network_profile:
        args["network_profile"] = network_profile
    return args


def _subnet_args(
    net: NetworkArgs, name: str, network: pulumi.Input[str], cidr: str
) -> dict[str, Any]:
    return {
        "name": name,
        "project": net.project,
        "region": net.region,
        "network": network,
        "ip_cidr_range": cidr,
    }


def main_subnet_args(net: NetworkArgs, network: pulumi.Input[str]) -> dict[str, Any]:
    return {
        **_subnet_args(net, f"{net.name_prefix}-sub", network, net.ranges.main_subnet_cidr),
        # Private nodes reach Google APIs (Artifact Registry, GCS) without public IPs.
        "private_ip_google_access": True,
        "secondary_ip_ranges": [
            {"range_name": PODS_RANGE_NAME, "ip_cidr_range": net.ranges.pods_cidr},
            {"range_name": SERVICES_RANGE_NAME, "ip_cidr_range": net.ranges.services_cidr},
        ],
    }


def internal_firewall_args(
    name: str, net: NetworkArgs, network: pulumi.Input[str], source_ranges: list[str]
) -> dict[str, Any]:
    return {
        "name": name,
        "project": net.project,
        "network": network,
        "direction": "INGRESS",
        "source_ranges": source_ranges,
        "allows": [
            {"protocol": "tcp", "ports": ["0-65535"]},
            {"protocol": "udp", "ports": ["0-65535"]},
            {"protocol": "icmp"},
        ],
    }


def gvnic_subnet_args(net: NetworkArgs, network: pulumi.Input[str]) -> dict[str, Any]:
    return _subnet_args(net, f"{net.name_prefix}-gvnic-sub", network, net.ranges.gvnic_subnet_cidr)


def rdma_subnet_args(net: NetworkArgs, network: pulumi.Input[str]) -> list[dict[str, Any]]:
    return [
        _subnet_args(net, f"{net.name_prefix}-rdma-sub-{index}", network, cidr)
        for index, cidr in enumerate(net.ranges.rdma_subnet_cidrs())
    ]


def nat_args(net: NetworkArgs, router: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "name": f"{net.name_prefix}-nat",
        "project": net.project,
        "region": net.region,
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
class InternalVpc:
    """A VPC with one subnet whose firewall admits all traffic from its own ranges (main, gVNIC)."""

    network: str  # the VPC's name
    firewall: str  # the internal firewall rule's name
    subnet: Callable[[NetworkArgs, pulumi.Input[str]], dict[str, Any]]  # builder, given the VPC id
    source_ranges: list[str]


def internal_vpcs(net: NetworkArgs) -> dict[str, InternalVpc]:
    """The main VPC (nodes and pods) and the gVNIC VPC, by the component's resource-name key."""
    prefix, ranges = net.name_prefix, net.ranges
    return {
        "main": InternalVpc(
            f"{prefix}-net",
            f"{prefix}-net-internal",
            main_subnet_args,
            [ranges.main_subnet_cidr, ranges.pods_cidr],
        ),
        "gvnic": InternalVpc(
            f"{prefix}-gvnic-net",
            f"{prefix}-gvnic-internal",
            gvnic_subnet_args,
            [ranges.gvnic_subnet_cidr],
        ),
    }


def _internal_vpc(
    name: str,
    args: NetworkArgs,
    vpc: InternalVpc,
    *,
    parent: pulumi.Resource,
    retain_on_delete: bool | None = None,
) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
    """The VPC `name`, its subnet `name-sub` and firewall `name-internal`, children of `parent`."""
    child = pulumi.ResourceOptions(parent=parent)
    network = gcp.compute.Network(
        name,
        **vpc_args(args, vpc.network),
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=retain_on_delete),
    )
    subnet = gcp.compute.Subnetwork(f"{name}-sub", **vpc.subnet(args, network.id), opts=child)
    gcp.compute.Firewall(
        f"{name}-internal",
        **internal_firewall_args(vpc.firewall, args, network.name, vpc.source_ranges),
        opts=child,
    )
    return network, subnet


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
        child = pulumi.ResourceOptions(parent=self)

        vpcs = internal_vpcs(args)
        self.main_network, self.main_subnet = _internal_vpc(
            f"{name}-main",
            args,
            vpcs["main"],
            parent=self,
            retain_on_delete=args.keep_main_network,
        )
        # Nodes have no public IPs; NAT is their only way to pull public images (nvcr.io, Docker Hub).
        router = gcp.compute.Router(
            f"{name}-router",
            name=f"{args.name_prefix}-router",
            project=args.project,
            region=args.region,
            network=self.main_network.id,
            opts=child,
        )
        gcp.compute.RouterNat(f"{name}-nat", **nat_args(args, router.name), opts=child)

        self.gvnic_network, self.gvnic_subnet = _internal_vpc(
            f"{name}-gvnic", args, vpcs["gvnic"], parent=self
        )

        # No firewall rules on a RoCE network: the profile has its own implicit rules and
        # cluster-toolkit's vpc module refuses firewall rules on `*roce*` profiles.
        self.rdma_network = gcp.compute.Network(
            f"{name}-rdma",
            **vpc_args(args, f"{args.name_prefix}-rdma-net", rdma_profile(args)),
            opts=child,
        )
        self.rdma_subnets = [
            gcp.compute.Subnetwork(f"{name}-rdma-sub-{index}", **subnet, opts=child)
            for index, subnet in enumerate(rdma_subnet_args(args, self.rdma_network.id))
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
