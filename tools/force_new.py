"""Which input changes make the provider replace a resource: the force-new table behind `tools.plan_diff`.

Taken from the Terraform provider pulumi-gcp bridges, terraform-provider-google-beta, at commit
3dc173a397749158369ea839a2890d89f8c9c370 (v7.45.0, 2026-08-18): the `upstream` submodule of
pulumi/pulumi-gcp at ed6078aacc64 (v9.35.0, the newest commit of that repository we could read).
pulumi-gcp 10.2.0, which requirements.txt pins, was tagged after it and its own upstream commit
was not in any mirror available here; google-beta `main` at 93c65b2d60fe (2026-08-21) has the same
ForceNew fields in every file below except four new `host_maintenance_policy` sub-fields this
program never sets. tests/tools/test_force_new.py checks that every path exists, with the same
shape, in the installed pulumi-gcp SDK types, so a rename there fails a test instead of silently
hiding a replacement.

Every `ForceNew: true` field of each resource type the program registers, found in the schema
files named per entry (under `google-beta/services/`, lines at that commit), written as Pulumi
input paths: camelCase, `[]` for a list element. Two kinds, following terraform-plugin-sdk v2:
  - "value": any change at or under the path replaces (scalars, maps such as `metadata`, sets and
    lists of scalars such as `oauthScopes`);
  - "block": a nested block whose own ForceNew only concerns its presence or element count
    (`schemaMap.diffList` marks the `#` count RequiresNew); changes inside it replace only through
    its own force-new fields.
Replacements decided outside the schema (CustomizeDiff) are in CONDITIONAL: a subnetwork whose
`ipCidrRange` shrinks (`customdiff.ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr)`,
compute/resource_compute_subnetwork.go line 512).

Kubernetes objects follow pulumi-kubernetes' own table instead (tools/force_new_kubernetes.py);
`tools.plan_diff.force_new_entries` picks the table by resource type.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

UPSTREAM = "hashicorp/terraform-provider-google-beta"
UPSTREAM_COMMIT = "3dc173a397749158369ea839a2890d89f8c9c370"


Kind = Literal["value", "block"]


@dataclass(frozen=True)
class ForceNew:
    path: str  # Pulumi input path, e.g. nodeConfig.guestAccelerators[].type
    kind: Kind
    source: str  # file under google-beta/services/ at UPSTREAM_COMMIT
    line: int


def _schema(source: str, *fields: tuple[str, Kind, int]) -> tuple[ForceNew, ...]:
    """The force-new fields found in one schema file, each given as (path, kind, line)."""
    return tuple(ForceNew(path, kind, source, line) for path, kind, line in fields)


# The `node_config` schema (container/node_config.go) is one block in the provider, used by the
# cluster's default pool and by every node pool alike: listed once, spread into both.
NODE_CONFIG: tuple[ForceNew, ...] = _schema(
    "container/node_config.go",
    ("nodeConfig", "block", 284),
    ("nodeConfig.guestAccelerators[]", "block", 320),
    ("nodeConfig.guestAccelerators[].count", "value", 327),
    ("nodeConfig.guestAccelerators[].type", "value", 333),
    ("nodeConfig.guestAccelerators[].gpuDriverInstallationConfig", "block", 342),
    ("nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion", "value", 349),
    ("nodeConfig.guestAccelerators[].gpuPartitionSize", "value", 359),
    ("nodeConfig.guestAccelerators[].gpuSharingConfig", "block", 366),
    ("nodeConfig.guestAccelerators[].gpuSharingConfig.gpuSharingStrategy", "value", 373),
    ("nodeConfig.guestAccelerators[].gpuSharingConfig.maxSharedClientsPerGpu", "value", 379),
    ("nodeConfig.localSsdCount", "value", 442),
    ("nodeConfig.ephemeralStorageConfig", "block", 454),
    ("nodeConfig.ephemeralStorageConfig.localSsdCount", "value", 460),
    ("nodeConfig.ephemeralStorageLocalSsdConfig", "block", 473),
    ("nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount", "value", 479),
    ("nodeConfig.ephemeralStorageLocalSsdConfig.dataCacheCount", "value", 486),
    ("nodeConfig.localNvmeSsdBlockConfig", "block", 499),
    ("nodeConfig.localNvmeSsdBlockConfig.localSsdCount", "value", 505),
    ("nodeConfig.secondaryBootDisks[]", "block", 518),
    ("nodeConfig.secondaryBootDisks[].diskImage", "value", 524),
    ("nodeConfig.secondaryBootDisks[].mode", "value", 530),
    ("nodeConfig.metadata", "value", 566),
    ("nodeConfig.minCpuPlatform", "value", 575),
    ("nodeConfig.oauthScopes[]", "value", 583),
    ("nodeConfig.preemptible", "value", 598),
    ("nodeConfig.reservationAffinity", "block", 607),
    ("nodeConfig.reservationAffinity.consumeReservationType", "value", 613),
    ("nodeConfig.reservationAffinity.key", "value", 620),
    ("nodeConfig.reservationAffinity.values[]", "value", 626),
    ("nodeConfig.spot", "value", 638),
    ("nodeConfig.serviceAccount", "value", 647),
    ("nodeConfig.shieldedInstanceConfig", "block", 669),
    ("nodeConfig.shieldedInstanceConfig.enableSecureBoot", "value", 677),
    ("nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring", "value", 684),
    ("nodeConfig.sandboxConfig", "block", 764),
    ("nodeConfig.bootDiskKmsKey", "value", 790),
    ("nodeConfig.nodeGroup", "value", 1303),
    ("nodeConfig.advancedMachineFeatures", "block", 1312),
    ("nodeConfig.advancedMachineFeatures.threadsPerCore", "value", 1318),
    ("nodeConfig.advancedMachineFeatures.enableNestedVirtualization", "value", 1324),
    ("nodeConfig.soleTenantConfig", "block", 1341),
    ("nodeConfig.soleTenantConfig.nodeAffinities[]", "block", 1348),
    ("nodeConfig.soleTenantConfig.nodeAffinities[].key", "value", 1355),
    ("nodeConfig.soleTenantConfig.nodeAffinities[].operator", "value", 1361),
    ("nodeConfig.soleTenantConfig.nodeAffinities[].values[]", "value", 1368),
    ("nodeConfig.hostMaintenancePolicy", "block", 1387),
    ("nodeConfig.hostMaintenancePolicy.maintenanceInterval", "value", 1394),
    ("nodeConfig.confidentialNodes.confidentialInstanceType", "value", 1417),
    ("nodeConfig.enableConfidentialStorage", "value", 1448),
    ("nodeConfig.localSsdEncryptionMode", "value", 1454),
    ("nodeConfig.maxRunDuration", "value", 1461),
    ("nodeConfig.flexStart", "value", 1467),
)


# The IAM member schema (tpgiamresource/resource_iam_member.go) is one generic resource in the
# provider, behind the project's and the service account's IAM members alike: listed once, spread
# into both beside each one's own parent field.
IAM_MEMBER: tuple[ForceNew, ...] = _schema(
    "../tpgiamresource/resource_iam_member.go",
    ("role", "value", 67),
    ("member", "value", 72),
    ("condition", "block", 80),
    ("condition.expression", "value", 86),
    ("condition.title", "value", 91),
    ("condition.description", "value", 96),
)


FORCE_NEW: dict[str, tuple[ForceNew, ...]] = {
    "gcp:compute/network:Network": _schema(
        "compute/resource_compute_network.go",
        ("name", "value", 143),
        ("autoCreateSubnetworks", "value", 156),
        ("description", "value", 168),
        ("internalIpv6Range", "value", 182),
        ("networkProfile", "value", 209),
        ("params", "block", 220),
        ("params.resourceManagerTags", "value", 228),
        ("project", "value", 305),
    ),
    "gcp:compute/subnetwork:Subnetwork": _schema(
        "compute/resource_compute_subnetwork.go",
        ("name", "value", 547),
        ("network", "value", 560),
        ("description", "value", 577),
        ("externalIpv6Prefix", "value", 586),
        ("internalIpv6Prefix", "value", 593),
        ("params", "block", 698),
        ("params.resourceManagerTags", "value", 706),
        ("region", "value", 748),
        ("reservedInternalRange", "value", 755),
        ("resolveSubnetMask", "value", 763),
        ("project", "value", 903),
    ),
    "gcp:compute/firewall:Firewall": _schema(
        "compute/resource_compute_firewall.go",
        ("name", "value", 249),
        ("direction", "value", 306),
        ("params", "block", 341),
        ("project", "value", 476),
    ),
    "gcp:compute/router:Router": _schema(
        "compute/resource_compute_router.go",
        ("name", "value", 166),
        ("encryptedInterconnectRouter", "value", 259),
        ("nccGateway", "value", 287),
        ("network", "value", 295),
        ("params", "block", 303),
        ("region", "value", 323),
        ("project", "value", 336),
    ),
    "gcp:compute/routerNat:RouterNat": _schema(
        "compute/resource_compute_router_nat.go",
        ("name", "value", 307),
        ("router", "value", 315),
        ("endpointTypes[]", "value", 378),
        ("initialNatIps[]", "value", 397),
        ("region", "value", 475),
        ("type", "value", 528),
        ("project", "value", 546),
    ),
    "gcp:compute/globalAddress:GlobalAddress": _schema(
        "compute/resource_compute_global_address.go",
        ("name", "value", 144),
        ("address", "value", 157),
        ("addressType", "value", 165),
        ("description", "value", 177),
        ("ipVersion", "value", 183),
        ("network", "value", 201),
        ("prefixLength", "value", 213),
        ("purpose", "value", 223),
        ("project", "value", 258),
    ),
    "gcp:servicenetworking/connection:Connection": _schema(
        "servicenetworking/resource_service_networking_connection.go",
        ("network", "value", 70),
        ("service", "value", 83),
    ),
    "gcp:lustre/instance:Instance": _schema(
        "lustre/resource_lustre_instance.go",
        ("filesystem", "value", 157),
        ("instanceId", "value", 165),
        ("location", "value", 176),
        ("network", "value", 182),
        ("dynamicTierOptions", "block", 264),
        ("dynamicTierOptions.mode", "value", 272),
        ("kmsKey", "value", 290),
        ("perUnitStorageThroughput", "value", 531),
        ("project", "value", 629),
    ),
    "gcp:serviceaccount/account:Account": _schema(
        "resourcemanager/resource_google_service_account.go",
        ("accountId", "value", 93),
        ("project", "value", 118),
    ),
    "gcp:artifactregistry/repository:Repository": _schema(
        "artifactregistry/resource_artifact_registry_repository.go",
        ("format", "value", 305),
        ("repositoryId", "value", 315),
        ("kmsKeyName", "value", 448),
        ("location", "value", 472),
        ("mavenConfig.allowSnapshotOverwrites", "value", 493),
        ("mavenConfig.versionPolicy", "value", 500),
        ("mode", "value", 511),
        ("remoteRepositoryConfig", "block", 519),
        ("remoteRepositoryConfig.aptRepository", "block", 527),
        ("remoteRepositoryConfig.aptRepository.publicRepository", "block", 535),
        ("remoteRepositoryConfig.aptRepository.publicRepository.repositoryBase", "value", 543),
        ("remoteRepositoryConfig.aptRepository.publicRepository.repositoryPath", "value", 550),
        ("remoteRepositoryConfig.commonRepository", "block", 563),
        ("remoteRepositoryConfig.commonRepository.uri", "value", 571),
        ("remoteRepositoryConfig.description", "value", 584),
        ("remoteRepositoryConfig.dockerRepository", "block", 596),
        ("remoteRepositoryConfig.dockerRepository.customRepository", "block", 604),
        ("remoteRepositoryConfig.dockerRepository.customRepository.uri", "value", 612),
        ("remoteRepositoryConfig.dockerRepository.publicRepository", "value", 622),
        ("remoteRepositoryConfig.mavenRepository", "block", 634),
        ("remoteRepositoryConfig.mavenRepository.customRepository", "block", 642),
        ("remoteRepositoryConfig.mavenRepository.customRepository.uri", "value", 650),
        ("remoteRepositoryConfig.mavenRepository.publicRepository", "value", 660),
        ("remoteRepositoryConfig.noCache", "block", 672),
        ("remoteRepositoryConfig.npmRepository", "block", 682),
        ("remoteRepositoryConfig.npmRepository.customRepository", "block", 690),
        ("remoteRepositoryConfig.npmRepository.customRepository.uri", "value", 698),
        ("remoteRepositoryConfig.npmRepository.publicRepository", "value", 708),
        ("remoteRepositoryConfig.pythonRepository", "block", 720),
        ("remoteRepositoryConfig.pythonRepository.customRepository", "block", 728),
        ("remoteRepositoryConfig.pythonRepository.customRepository.uri", "value", 736),
        ("remoteRepositoryConfig.pythonRepository.publicRepository", "value", 746),
        ("remoteRepositoryConfig.yumRepository", "block", 790),
        ("remoteRepositoryConfig.yumRepository.publicRepository", "block", 798),
        ("remoteRepositoryConfig.yumRepository.publicRepository.repositoryBase", "value", 806),
        ("remoteRepositoryConfig.yumRepository.publicRepository.repositoryPath", "value", 813),
        ("project", "value", 930),
    ),
    "gcp:projects/service:Service": _schema(
        "resourcemanager/resource_google_project_service.go",
        ("service", "value", 136),
        ("project", "value", 143),
    ),
    "gcp:container/cluster:Cluster": _schema(
        "container/resource_container_cluster.go",
        ("name", "value", 298),
        ("location", "value", 332),
        ("clusterAutoscaling.autoProvisioningDefaults.bootDiskKmsKey", "value", 877),
        ("clusterIpv4Cidr", "value", 1070),
        ("description", "value", 1079),
        ("enableKubernetesAlpha", "value", 1113),
        ("enableTpu", "value", 1138),
        ("tpuConfig.enabled", "value", 1157),
        ("tpuConfig.useServiceNetworking", "value", 1168),
        ("enableAutopilot", "value", 1193),
        ("initialNodeCount", "value", 1235),
        ("confidentialNodes", "block", 1717),
        ("confidentialNodes.enabled", "value", 1725),
        ("confidentialNodes.confidentialInstanceType", "value", 1731),
        ("masterAuth.clientCertificateConfig", "block", 1752),
        ("masterAuth.clientCertificateConfig.issueClientCertificate", "value", 1759),
        ("network", "value", 1816),
        ("nodePools[]", "block", 1852),
        ("project", "value", 2022),
        ("subnetwork", "value", 2030),
        ("ipAllocationPolicy", "block", 2062),
        ("ipAllocationPolicy.clusterIpv4CidrBlock", "value", 2074),
        ("ipAllocationPolicy.servicesIpv4CidrBlock", "value", 2084),
        ("ipAllocationPolicy.clusterSecondaryRangeName", "value", 2095),
        ("ipAllocationPolicy.servicesSecondaryRangeName", "value", 2104),
        ("ipAllocationPolicy.podCidrOverprovisionConfig", "block", 2120),
        ("networkingMode", "value", 2234),
        ("privateClusterConfig.masterIpv4CidrBlock", "value", 2344),
        ("privateClusterConfig.privateEndpointSubnetwork", "value", 2362),
        ("defaultMaxPodsPerNode", "value", 2424),
        ("datapathProvider", "value", 2626),
        ("dataplaneOptimizationMode", "value", 2635),
        ("userManagedKeysConfig.clusterCa", "value", 2840),
        ("userManagedKeysConfig.etcdApiCa", "value", 2846),
        ("userManagedKeysConfig.etcdPeerCa", "value", 2852),
        ("userManagedKeysConfig.aggregationCa", "value", 2858),
    )
    + NODE_CONFIG,
    "gcp:container/nodePool:NodePool": _schema(
        "container/resource_container_node_pool.go",
        ("project", "value", 243),
        ("cluster", "value", 249),
        ("location", "value", 256),
        ("placementPolicy", "block", 386),
        ("placementPolicy.policyName", "value", 397),
        ("queuedProvisioning", "block", 414),
        ("queuedProvisioning.enabled", "value", 420),
        ("maxPodsPerNode", "value", 430),
        ("initialNodeCount", "value", 483),
        ("name", "value", 531),
        ("namePrefix", "value", 539),
        ("networkConfig.acceleratorNetworkProfile", "value", 572),
        ("networkConfig.createPodRange", "value", 577),
        ("networkConfig.podRange", "value", 589),
        ("networkConfig.podIpv4CidrBlock", "value", 596),
        ("networkConfig.additionalNodeNetworkConfigs[]", "block", 605),
        ("networkConfig.additionalNodeNetworkConfigs[].network", "value", 613),
        ("networkConfig.additionalNodeNetworkConfigs[].subnetwork", "value", 620),
        ("networkConfig.additionalPodNetworkConfigs[]", "block", 629),
        ("networkConfig.additionalPodNetworkConfigs[].subnetwork", "value", 636),
        ("networkConfig.additionalPodNetworkConfigs[].secondaryPodRange", "value", 642),
        ("networkConfig.additionalPodNetworkConfigs[].maxPodsPerNode", "value", 648),
        ("networkConfig.podCidrOverprovisionConfig", "block", 659),
        ("networkConfig.subnetwork", "value", 690),
    )
    + NODE_CONFIG,
    # These two were read at later google-beta commits than UPSTREAM_COMMIT (the mirror here held
    # those): monitoring/resource_monitoring_dashboard.go at 1484cfddae5c (handwritten; only the
    # project forces a new dashboard, dashboard_json is PATCHed), logging/resource_logging_metric.go
    # at 02b32db096a8; the lines are at those commits.
    "gcp:monitoring/dashboard:Dashboard": _schema(
        "monitoring/resource_monitoring_dashboard.go",
        ("project", "value", 112),
    ),
    "gcp:logging/metric:Metric": _schema(
        "logging/resource_logging_metric.go",
        ("project", "value", 321),
        ("metricDescriptor.labels[].key", "value", 334),
        ("metricDescriptor.labels[].valueType", "value", 345),
    ),
    "gcp:projects/iAMMember:IAMMember": (
        *IAM_MEMBER,
        ForceNew("project", "value", "resourcemanager/iam_project.go", 38),
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": (
        *IAM_MEMBER,
        ForceNew("serviceAccountId", "value", "resourcemanager/iam_service_account.go", 40),
    ),
}


def _shrinks(old: Any, new: Any) -> bool:
    """IsShrinkageIpCidr: the new range does not contain the old one."""
    try:
        before, after = ipaddress.ip_network(str(old)), ipaddress.ip_network(str(new))
    except ValueError:
        return False
    return not (before.version == after.version and before.subnet_of(after))  # type: ignore[arg-type]


# (type, path) -> predicate(old, new): replaced only when it holds.
CONDITIONAL: dict[tuple[str, str], Callable[[Any, Any], bool]] = {
    ("gcp:compute/subnetwork:Subnetwork", "ipCidrRange"): _shrinks,
}
