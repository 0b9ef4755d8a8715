"""Guard rails on the GCP layer: GKE control plane and nodes, GPU capacity, the RDMA VPC.

Each check reads camelCase wire names (`masterAuthorizedNetworksConfig`), which is what the
engine hands a policy (pulumi-policy's own tests read `props["fileAsset"]`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy.props import UNKNOWN, as_list, dig, network_name, plain

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
NETWORK = "gcp:compute/network:Network"
FIREWALL = "gcp:compute/firewall:Firewall"

# The Compute Engine default service account is `<project-number>-compute@developer...`; GKE
# uses it when `serviceAccount` is unset or "default" (GKE hardening guide: "use a
# least-privilege service account"), and it holds roles/editor on the project by default.
_DEFAULT_SA = re.compile(r"^\d+-compute@developer\.gserviceaccount\.com$")


def _is_default_service_account(value: Any) -> bool:
    if value is UNKNOWN:
        # Computed from a resource in this stack (our node SA's email), so not the default one.
        return False
    return value in (None, "", "default") or bool(_DEFAULT_SA.match(str(value)))


def _open_to_everyone(cidr: Any) -> bool:
    if not isinstance(cidr, str):
        return False
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen == 0
    except ValueError:
        return False


def _control_plane_not_public(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER:
        return
    props = plain(args.props)
    if dig(props, "privateClusterConfig", "enablePrivateEndpoint") is True:
        return  # no public endpoint at all
    config = dig(props, "masterAuthorizedNetworksConfig")
    if config is UNKNOWN:
        return
    if not isinstance(config, dict):
        report(
            "The public control-plane endpoint accepts connections from anywhere: set "
            "masterAuthorizedNetworksConfig.cidrBlocks to your own ranges (stack key "
            "rl-on-gke:authorizedNetworks).",
            None,
        )
        return
    blocks = as_list(config.get("cidrBlocks"))
    if config.get("cidrBlocks") is not UNKNOWN and not blocks:
        report(
            "masterAuthorizedNetworksConfig has no cidrBlocks, so nothing restricts the public "
            "endpoint: list your own ranges in rl-on-gke:authorizedNetworks.",
            None,
        )
    for block in blocks:
        cidr = dig(block, "cidrBlock")
        if _open_to_everyone(cidr):
            report(
                f"masterAuthorizedNetworksConfig allows {cidr}, which opens the control plane to the "
                "whole internet: replace it with your office/VPN range (rl-on-gke:authorizedNetworks).",
                None,
            )
    if config.get("gcpPublicCidrsAccessEnabled") is True:
        report(
            "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled is true, which admits every "
            "Google Cloud public IP (anyone's VM): set it to false.",
            None,
        )


@dataclass(frozen=True)
class _FieldRule:
    """One property that must not hold a bad value on the resource types it applies to."""

    types: tuple[str, ...]
    path: tuple[str, ...]
    # Unknown values (computed at apply) are judged here: most rules let them pass.
    bad: Callable[[Any], bool]
    message: str


def _field_rules(*rules: _FieldRule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """A policy's validate function: each rule that applies to the resource, in order."""

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        props = plain(args.props)
        for rule in rules:
            if args.resource_type in rule.types and rule.bad(dig(props, *rule.path)):
                report(rule.message, None)

    return validate


_private_nodes = _field_rules(
    _FieldRule(
        (CLUSTER,),
        ("privateClusterConfig", "enablePrivateNodes"),
        lambda value: value is not UNKNOWN and value is not True,
        "Nodes get public IPs: set privateClusterConfig.enablePrivateNodes = true (egress "
        "goes through Cloud NAT).",
    ),
    _FieldRule(
        (NODE_POOL,),
        ("networkConfig", "enablePrivateNodes"),
        lambda value: value is False,
        "This node pool overrides the cluster and gives its nodes public IPs: drop "
        "networkConfig.enablePrivateNodes = false.",
    ),
)

_workload_identity = _field_rules(
    _FieldRule(
        (CLUSTER,),
        ("workloadIdentityConfig", "workloadPool"),
        lambda pool: pool is not UNKNOWN and not pool,
        "Workload Identity is off: set workloadIdentityConfig.workloadPool to "
        "'<project>.svc.id.goog' so pods get their own identities instead of the node's.",
    ),
    _FieldRule(
        (CLUSTER, NODE_POOL),
        ("nodeConfig", "workloadMetadataConfig", "mode"),
        lambda mode: mode == "GCE_METADATA",
        "nodeConfig.workloadMetadataConfig.mode is GCE_METADATA, which lets every pod use "
        "the node's service account: set it to GKE_METADATA.",
    ),
)


def _nodes_not_default_sa(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (CLUSTER, NODE_POOL):
        return
    props = plain(args.props)
    account = dig(props, "nodeConfig", "serviceAccount")
    if _is_default_service_account(account):
        where = (
            "the cluster's default node pool" if args.resource_type == CLUSTER else "this node pool"
        )
        report(
            f"{where} runs as the Compute Engine default service account "
            f"({account or 'unset'}), which has project Editor: set nodeConfig.serviceAccount to "
            "the stack's dedicated node service account.",
            None,
        )
    if args.resource_type == CLUSTER and dig(props, "clusterAutoscaling", "enabled") is True:
        nap = dig(props, "clusterAutoscaling", "autoProvisioningDefaults", "serviceAccount")
        if _is_default_service_account(nap):
            report(
                "Node auto-provisioning would create pools on the default service account: set "
                "clusterAutoscaling.autoProvisioningDefaults.serviceAccount.",
                None,
            )


def _spot_pools_no_reservation(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NODE_POOL:
        return
    props = plain(args.props)
    spot = (
        dig(props, "nodeConfig", "spot") is True or dig(props, "nodeConfig", "preemptible") is True
    )
    if not spot:
        return
    consume = dig(props, "nodeConfig", "reservationAffinity", "consumeReservationType")
    if consume is UNKNOWN or consume == "NO_RESERVATION":
        return
    report(
        f"This spot pool would consume reservations (consumeReservationType={consume or 'unset'}, "
        "GKE defaults to ANY_RESERVATION): set nodeConfig.reservationAffinity.consumeReservationType "
        "= NO_RESERVATION. GKE rejects spot with a specific reservation, and 'any' would burn "
        "reserved capacity on preemptible nodes.",
        None,
    )


def _firewall_network_names(firewall: Any) -> set[str]:
    """What a firewall's `network` names, from its value or, when unknown, its property dependency."""
    names: set[str] = set()
    name = network_name(dig(plain(firewall.props), "network"))
    if name:
        names.add(name)
    for dependency in firewall.property_dependencies.get("network", []):
        names.add(dependency.urn)
    return names


def _rdma_vpc_no_firewall(args: StackValidationArgs, report: ReportViolation) -> None:
    # Every way a firewall can name an RDMA network (name, id, self link, URN) -> its name.
    rdma: dict[str, str] = {}
    for resource in args.resources:
        if resource.resource_type != NETWORK:
            continue
        props = plain(resource.props)
        profile = dig(props, "networkProfile")
        if not isinstance(profile, str) or "vpc-roce" not in profile:
            continue
        label = props.get("name") if isinstance(props.get("name"), str) else resource.name
        for key in ("name", "id", "selfLink"):
            name = network_name(props.get(key))
            if name:
                rdma[name] = label
        rdma[resource.urn] = label
    if not rdma:
        return
    for resource in args.resources:
        if resource.resource_type != FIREWALL:
            continue
        for name in _firewall_network_names(resource) & set(rdma):
            report(
                f"Firewall {resource.name} targets the RDMA VPC {rdma[name]}: RoCE networks must have "
                "no firewall rules (RDMA network profile docs; cluster-toolkit gpu-rdma-vpc "
                "precondition). Remove it; RDMA traffic never passes VPC firewalls.",
                resource.urn,
            )


POLICIES = [
    ResourceValidationPolicy(
        name="gke-control-plane-not-public",
        description="The GKE control plane is reachable only from listed networks, never 0.0.0.0/0.",
        validate=_control_plane_not_public,
    ),
    ResourceValidationPolicy(
        name="gke-private-nodes",
        description="GKE nodes have no public IPs (privateClusterConfig.enablePrivateNodes).",
        validate=_private_nodes,
    ),
    ResourceValidationPolicy(
        name="gke-workload-identity",
        description="Workload Identity is on for the cluster and every pool (GKE_METADATA).",
        validate=_workload_identity,
    ),
    ResourceValidationPolicy(
        name="gke-nodes-not-default-service-account",
        description="Nodes run as a dedicated service account, not the Compute Engine default one.",
        validate=_nodes_not_default_sa,
    ),
    ResourceValidationPolicy(
        name="spot-pools-no-reservation",
        description="Spot (or preemptible) node pools consume no reservation (NO_RESERVATION).",
        validate=_spot_pools_no_reservation,
    ),
    StackValidationPolicy(
        name="rdma-vpc-no-firewall",
        description="No firewall rule targets a VPC with an RDMA (vpc-roce) network profile.",
        validate=_rdma_vpc_no_firewall,
    ),
]
