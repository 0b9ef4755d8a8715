"""GKE multi-network objects: one GKENetworkParamSet + Network pair per extra GPU-node NIC.

The GPU pool attaches one gVNIC and eight RDMA NICs (components/gcp/gpu_pool.py); a pod sees them only
when a `networking.gke.io/v1` Network of the same name exists and the pod asks for it by name in
its `networking.gke.io/interfaces` annotation (reference 3.1, 3.6). Both halves live here so the
names cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi

from components.contract import RDMA_NIC_COUNT
from components.gcp.network import GpuNics
from components.k8s.provider import KubeTarget, custom_object

API_VERSION = "networking.gke.io/v1"
# cluster-toolkit's k8s_network_names defaults: gVNIC numbered from 1 (eth0 is the primary VPC),
# RDMA from 0; the same names are used by the GKE tutorials' pod annotations.
GVNIC_NETWORK = "gvnic-1"
RDMA_NETWORKS = tuple(f"rdma-{i}" for i in range(RDMA_NIC_COUNT))
# The pod's primary interface stays on the cluster's own network, which GKE names "default".
PRIMARY_INTERFACE = "eth0"
PRIMARY_NETWORK = "default"


@dataclass(frozen=True)
class DeviceNetwork:
    """One extra node NIC exposed to pods as a Device network."""

    name: str
    vpc: pulumi.Input[str]
    subnet: pulumi.Input[str]
    # NetDevice moves the gVNIC into the pod; RDMA hands it the MRDMA device (reference 3.1).
    device_mode: Literal["NetDevice", "RDMA"]


def device_networks(
    gvnic_vpc: pulumi.Input[str],
    gvnic_subnet: pulumi.Input[str],
    rdma_vpc: pulumi.Input[str],
    rdma_subnets: Sequence[pulumi.Input[str]],
) -> list[DeviceNetwork]:
    """gvnic-1, then rdma-0..rdma-7 in subnet order. VPC and subnets are names, not self links."""
    if len(rdma_subnets) != RDMA_NIC_COUNT:
        raise ValueError(
            f"expected {RDMA_NIC_COUNT} RDMA subnets (one per GPU NIC), got {len(rdma_subnets)}"
        )
    return [DeviceNetwork(GVNIC_NETWORK, gvnic_vpc, gvnic_subnet, "NetDevice")] + [
        DeviceNetwork(name, rdma_vpc, subnet, "RDMA")
        for name, subnet in zip(RDMA_NETWORKS, rdma_subnets, strict=True)
    ]


def _named_after(network: DeviceNetwork, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A networking.gke.io object of this kind that bears its device network's name."""
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": network.name},
        "spec": spec,
    }


def param_set_manifest(network: DeviceNetwork) -> dict[str, Any]:
    return _named_after(
        network,
        "GKENetworkParamSet",
        {"vpc": network.vpc, "vpcSubnet": network.subnet, "deviceMode": network.device_mode},
    )


def network_manifest(network: DeviceNetwork) -> dict[str, Any]:
    return _named_after(
        network,
        "Network",
        {
            "type": "Device",
            "parametersRef": {
                "group": "networking.gke.io",
                "kind": "GKENetworkParamSet",
                "name": network.name,
            },
        },
    )


def pod_interfaces() -> list[dict[str, str]]:
    """eth0 on the primary network, eth1 the gVNIC, eth2..eth9 the eight RDMA NICs."""
    names = [PRIMARY_NETWORK, GVNIC_NETWORK, *RDMA_NETWORKS]
    return [{"interfaceName": f"eth{i}", "network": name} for i, name in enumerate(names)]


def pod_network_annotations() -> dict[str, str]:
    """Annotations a GPU pod needs to be given every NIC of its node (reference 3.6)."""
    return {
        "networking.gke.io/default-interface": PRIMARY_INTERFACE,
        "networking.gke.io/interfaces": json.dumps(pod_interfaces(), separators=(",", ":")),
    }


@dataclass(frozen=True)
class GpuNetworksArgs:
    target: KubeTarget
    nics: GpuNics  # the GPU nodes' gVNIC and RDMA VPCs and subnets (components/gcp/network.py)
    # What must exist first: the CRD gate (crd_gate.py), since GKE installs these kinds late.
    depends_on: Sequence[pulumi.Resource] = ()


class GpuNetworks(pulumi.ComponentResource):
    """The nine Device networks; `resources` is what pods using them must wait for."""

    resources: list[pulumi.Resource]

    def __init__(
        self, name: str, args: GpuNetworksArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        nics = args.nics
        networks = device_networks(
            nics.gvnic_network, nics.gvnic_subnet, nics.rdma_network, nics.rdma_subnets
        )
        super().__init__("rl-on-gke:k8s:GpuNetworks", name, None, opts)
        self.resources = []
        for network in networks:
            param_set = custom_object(
                f"{name}-{network.name}-params",
                param_set_manifest(network),
                args.target.options(self, depends_on=list(args.depends_on)),
            )
            device_network = custom_object(
                f"{name}-{network.name}",
                network_manifest(network),
                # Parameters first, then the Network that points at them, as every reference
                # manifest orders them (reference 3.1).
                args.target.options(self, depends_on=[param_set, *args.depends_on]),
            )
            self.resources += [param_set, device_network]
        self.register_outputs({"networks": [n.name for n in networks]})
