"""Managed Lustre and the Private Service Access peering it is reached through.

Port mode: the instance is created *without* GKE support (LNet on 988) and the cluster's Lustre
CSI driver runs without the legacy port, so both sides speak 988 (GKE API
LustreCsiDriverConfig; reference gcp-and-k8s.md 2.6 / 8.1). The firewall opens exactly that port.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.catalogue import LUSTRE_LNET_PORT
from components.config import LustreSettings, StackConfig
from components.contract import PROTECT_LABEL, parse_mount_point

LUSTRE_GKE_SUPPORT_ENABLED = False


@dataclass(frozen=True)
class PrivateServiceAccessArgs:
    """The peering range's plan and whether the data it reaches is protected (`lustre.protect`)."""

    project: str
    name_prefix: str
    psa_cidr: str
    protect: bool
    network: gcp.compute.Network

    @classmethod
    def for_stack(
        cls, config: StackConfig, network: gcp.compute.Network
    ) -> PrivateServiceAccessArgs:
        return cls(
            project=config.project,
            name_prefix=config.name_prefix,
            psa_cidr=config.network.psa_cidr,
            protect=config.lustre.protect,
            network=network,
        )


@dataclass(frozen=True)
class ManagedLustreArgs:
    """The instance's settings (`lustre.*`), where it lives, and the range its clients come from."""

    project: str
    zone: str
    name_prefix: str
    instance_id: str
    psa_cidr: str
    lustre: LustreSettings
    network: gcp.compute.Network
    psa: PrivateServiceAccess

    @classmethod
    def for_stack(
        cls, config: StackConfig, network: gcp.compute.Network, psa: PrivateServiceAccess
    ) -> ManagedLustreArgs:
        return cls(
            project=config.project,
            zone=config.zone,
            name_prefix=config.name_prefix,
            instance_id=config.lustre_instance_id,
            psa_cidr=config.network.psa_cidr,
            lustre=config.lustre,
            network=network,
            psa=psa,
        )


def psa_address_args(args: PrivateServiceAccessArgs, network: pulumi.Input[str]) -> dict[str, Any]:
    psa = ipaddress.IPv4Network(args.psa_cidr)
    return {
        "name": f"{args.name_prefix}-psa",
        "project": args.project,
        "purpose": "VPC_PEERING",
        "address_type": "INTERNAL",
        "address": str(psa.network_address),
        "prefix_length": psa.prefixlen,
        "network": network,
    }


def psa_connection_args(
    network: pulumi.Input[str], address_name: pulumi.Input[str], protect: bool
) -> dict[str, Any]:
    return {
        "network": network,
        "service": "servicenetworking.googleapis.com",
        "reserved_peering_ranges": [address_name],
        # Deleting the connection fails while the producer side still holds anything ("Producer
        # services ... are still using this connection", which Lustre's tenant project does for
        # a while after the instance is gone), and ABANDON leaves the VPC peering behind, which
        # blocks deleting the network (magic-modules#18476). REMOVE_PEERING (pulumi-gcp 10.2
        # servicenetworking.Connection `deletion_policy`) deletes the connection and, when the API
        # refuses, removes the peering from the network, so an unprotected stack is destroyed to
        # the end. A protected peering is retained on delete (data_protection) and never reaches
        # the provider's delete; it keeps ABANDON, and procedure C of docs/destroy.md switches it
        # with `lustre.protect: false` before the destroy.
        "deletion_policy": "ABANDON" if protect else "REMOVE_PEERING",
    }


def lustre_instance_args(args: ManagedLustreArgs, network: pulumi.Input[str]) -> dict[str, Any]:
    lustre = args.lustre
    return {
        "instance_id": args.instance_id,
        "project": args.project,
        # Same zone as the GPU nodes: Lustre is zonal and cross-zone traffic costs latency and money.
        "location": args.zone,
        "network": network,
        # The Pulumi schema types both as strings.
        "capacity_gib": str(lustre.capacity_gib),
        "per_unit_storage_throughput": str(lustre.per_unit_storage_throughput),
        "filesystem": lustre.filesystem,
        "gke_support_enabled": LUSTRE_GKE_SUPPORT_ENABLED,
        "description": f"rl-on-gke {args.name_prefix}: checkpoints, datasets, HF cache",
        "labels": {PROTECT_LABEL: str(lustre.protect).lower(), "managed-by": "pulumi"},
    }


def lnet_firewall_args(args: ManagedLustreArgs, network: pulumi.Input[str]) -> dict[str, Any]:
    return {
        "name": f"{args.name_prefix}-allow-lustre",
        "project": args.project,
        "network": network,
        "direction": "INGRESS",
        "source_ranges": [args.psa_cidr],
        "allows": [{"protocol": "tcp", "ports": [str(LUSTRE_LNET_PORT)]}],
    }


def data_protection(protect: bool, **options: Any) -> pulumi.ResourceOptions:
    """Options for everything the data needs to stay reachable after `pulumi destroy`, with the
    resource's other `options` (parent, depends_on, ...)."""
    return pulumi.ResourceOptions(protect=protect, retain_on_delete=protect, **options)


class PrivateServiceAccess(pulumi.ComponentResource):
    """A VPC_PEERING range on the main VPC and the service networking connection that uses it."""

    address: gcp.compute.GlobalAddress
    connection: gcp.servicenetworking.Connection

    def __init__(
        self, name: str, args: PrivateServiceAccessArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:PrivateServiceAccess", name, None, opts)
        self.address = gcp.compute.GlobalAddress(
            f"{name}-range",
            **psa_address_args(args, args.network.id),
            opts=data_protection(args.protect, parent=self),
        )
        self.connection = gcp.servicenetworking.Connection(
            f"{name}-connection",
            **psa_connection_args(args.network.id, self.address.name, args.protect),
            opts=data_protection(args.protect, parent=self),
        )
        self.register_outputs({"range": args.psa_cidr, "peering": self.connection.peering})


class ManagedLustre(pulumi.ComponentResource):
    """The Lustre instance (after PSA is up) and the LNet firewall from the PSA range."""

    instance: gcp.lustre.Instance
    mount_point: pulumi.Output[str]
    ip: pulumi.Output[str]

    def __init__(
        self, name: str, args: ManagedLustreArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:ManagedLustre", name, None, opts)
        self.instance = gcp.lustre.Instance(
            f"{name}-instance",
            **lustre_instance_args(args, args.network.id),
            opts=data_protection(
                args.lustre.protect,
                parent=self,
                # The API needs the peering ACTIVE before it can place the instance.
                depends_on=[args.psa.connection],
                # Creation takes ~10 min or more; cluster-toolkit allows an hour.
                custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
            ),
        )
        gcp.compute.Firewall(
            f"{name}-lnet",
            **lnet_firewall_args(args, args.network.name),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.mount_point = self.instance.mount_point
        self.ip = self.instance.mount_point.apply(
            lambda mount_point: parse_mount_point(mount_point).ip
        )
        self.register_outputs(
            {
                "instanceId": self.instance.instance_id,
                "mountPoint": self.mount_point,
                "ip": self.ip,
                "filesystem": self.instance.filesystem,
            }
        )
