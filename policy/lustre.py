"""Guard rails on Managed Lustre: the data is protected, and both ends agree on the LNet port.

Protection: the program labels the instance `contract.PROTECT_LABEL: "true"|"false"` from the stack's
`lustre.protect`, because a policy sees `protect` but not the stack config. A policy cannot see
`retain_on_delete` at all: the analyzer protocol's resource options carry protect, ignoreChanges,
deleteBeforeReplace, additionalSecretOutputs, aliases, customTimeouts and parent only
(`AnalyzerResourceOptions`, pulumi 3.272.0 pulumi/runtime/proto/analyzer_pb2), so that half is
checked by tests/policy/test_lustre_retention.py on the rendered program instead.

Port: an instance created with `gkeSupportEnabled` serves LNet on 6988 and needs the cluster's
Lustre CSI driver on the legacy port; without it both use 988 (GKE API
LustreCsiDriverConfig.enable_legacy_lustre_port; a mismatch fails mounts with "Is the MGS
running?", lustre-csi-driver#104).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.catalogue import LUSTRE_LNET_PORT
from components.contract import PROTECT_LABEL
from policy.gcp import CLUSTER, FIREWALL
from policy.props import UNKNOWN, as_dict, as_list, dig, network_name, plain

LUSTRE = "gcp:lustre/instance:Instance"
GLOBAL_ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
# LNet port of an instance in GKE-support mode (Managed Lustre "GKE support" docs; CTK PR #4210).
LUSTRE_GKE_SUPPORT_PORT = 6988


def _lustre_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != LUSTRE:
        return
    label = as_dict(dig(plain(args.props), "labels")).get(PROTECT_LABEL)
    if label == "false":
        return  # the stack opted out with lustre.protect: false
    if not args.opts.protect:
        report(
            "The Lustre instance holds checkpoints and datasets but is not protected, so `pulumi destroy` "
            "would delete it: register it with protect=True and retain_on_delete=True, or opt out on "
            f"purpose with `pulumi config set --path lustre.protect false` (labels it {PROTECT_LABEL}=false).",
            None,
        )
    if label not in ("true", UNKNOWN):
        report(
            f"The Lustre instance's '{PROTECT_LABEL}' label is {label!r}; it must be 'true' or 'false' "
            "(set from the stack's lustre.protect).",
            None,
        )


def _allows_tcp_port(firewall: dict[str, Any], port: int) -> bool:
    if firewall.get("direction") not in (None, "INGRESS"):
        return False
    for rule in as_list(firewall.get("allows")):
        rule = as_dict(rule)
        if rule.get("protocol") not in ("tcp", "all"):
            continue
        ports = as_list(rule.get("ports"))
        if not ports:
            return True  # no ports listed = every port of the protocol
        for spec in ports:
            if not isinstance(spec, str):
                continue
            low, _, high = spec.partition("-")
            if low.isdigit() and int(low) <= port <= int(high or low):
                return True
    return False


def _cidr(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False) if isinstance(value, str) else None
    except ValueError:
        return None


def _psa_ranges(resources: list[Any]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The Private Service Access ranges the Lustre servers get their addresses from."""
    ranges = []
    for resource in resources:
        if resource.resource_type != GLOBAL_ADDRESS:
            continue
        props = plain(resource.props)
        if props.get("purpose") == "VPC_PEERING":
            network = _cidr(f"{props.get('address')}/{props.get('prefixLength')}")
            if network is not None:
                ranges.append(network)
    return ranges


def _opens_lnet(
    firewall: dict[str, Any], port: int, lustre_network: str | None, psa: list[Any]
) -> bool:
    """An ingress rule on the instance's VPC letting the Lustre servers (PSA range) reach `port`."""
    if not _allows_tcp_port(firewall, port):
        return False
    network = network_name(firewall.get("network"))
    if lustre_network and network and network != lustre_network:
        return False
    if not psa:
        return True  # the range is allocated by Google: cannot tell, do not guess
    sources = [_cidr(s) for s in as_list(firewall.get("sourceRanges"))]
    return any(
        s is not None and s.version == r.version and s.overlaps(r) for s in sources for r in psa
    )


def _lustre_port_matches_csi(args: StackValidationArgs, report: ReportViolation) -> None:
    instances = [r for r in args.resources if r.resource_type == LUSTRE]
    if not instances:
        return
    clusters = [(r, plain(r.props)) for r in args.resources if r.resource_type == CLUSTER]
    firewalls = [plain(r.props) for r in args.resources if r.resource_type == FIREWALL]
    psa = _psa_ranges(args.resources)
    for instance in instances:
        props = plain(instance.props)
        gke_support = dig(props, "gkeSupportEnabled")
        if gke_support is UNKNOWN:
            continue
        gke_support = gke_support is True
        for cluster, cluster_props in clusters:
            csi = as_dict(dig(cluster_props, "addonsConfig", "lustreCsiDriverConfig"))
            if csi.get("enabled") is not True:
                report(
                    f"Cluster {cluster.name} does not enable the Lustre CSI driver, so pods cannot mount "
                    f"{instance.name}: set addonsConfig.lustreCsiDriverConfig.enabled = true.",
                    cluster.urn,
                )
                continue
            legacy = csi.get("enableLegacyLustrePort")
            if legacy is UNKNOWN:
                continue
            if (legacy is True) != gke_support:
                report(
                    f"Lustre port mismatch: {instance.name} has gkeSupportEnabled={gke_support} but cluster "
                    f"{cluster.name} has lustreCsiDriverConfig.enableLegacyLustrePort={legacy is True}. They "
                    "must be equal or mounts fail ('Is the MGS running?'); this program uses false/false "
                    "with a tcp:988 firewall.",
                    cluster.urn,
                )
        port = LUSTRE_GKE_SUPPORT_PORT if gke_support else LUSTRE_LNET_PORT
        lustre_network = network_name(props.get("network"))
        if not any(_opens_lnet(f, port, lustre_network, psa) for f in firewalls):
            report(
                f"No ingress firewall on {lustre_network or 'the instance VPC'} allows tcp:{port} from the "
                f"Private Service Access range, and LNet on {instance.name} (gkeSupportEnabled="
                f"{gke_support}) needs it: add one with sourceRanges = the PSA range.",
                instance.urn,
            )


POLICIES = [
    ResourceValidationPolicy(
        name="lustre-protected",
        description="The Lustre instance is protected from deletion unless the stack opts out (lustre.protect).",
        validate=_lustre_protected,
    ),
    StackValidationPolicy(
        name="lustre-port-matches-csi",
        description="Lustre gkeSupportEnabled equals the cluster's enableLegacyLustrePort, and a firewall opens that LNet port to the PSA range.",
        validate=_lustre_port_matches_csi,
    ),
]
