"""The GKE cluster: its least-privilege node identity, control plane and on-demand system pool.

The system pool is never spot: it hosts the Ray head, whose loss ends every running job
(ray-project/ray#39787; reference grpo-jobs-and-ray.md 5.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.capacity import MAX_PODS_PER_NODE
from components.config import AuthorizedNetwork, ClusterSettings, StackConfig
from components.contract import NODE_ROLE_LABEL, get_credentials_command
from components.gcp.network import PODS_RANGE_NAME, SERVICES_RANGE_NAME
from components.gcp.placement import placement
from components.maintenance import (
    MaintenanceSettings,
    active_exclusions,
    ended_exclusions_warning,
    maintenance_policy_args,
    utc_now,
)

SYSTEM_POOL_NAME = "system"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# What a node itself needs: ship logs and metrics, and pull images from Artifact Registry.
# Training pods get their own identity through Workload Identity (components/k8s/identity.py).
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
    # Image streaming with a custom node service account (GKE "Use Image streaming", Requirements).
    "roles/serviceusage.serviceUsageConsumer",
)


@dataclass(frozen=True)
class GkeClusterArgs:
    """What the cluster reads of the stack: where, its names, `cluster.*`, the control plane's
    range and who may reach it, and the main VPC it lives on."""

    project: str
    region: str
    zone: str
    name_prefix: str
    cluster_name: str
    control_plane_cidr: str
    authorized_networks: tuple[AuthorizedNetwork, ...]
    settings: ClusterSettings
    network: gcp.compute.Network
    subnetwork: gcp.compute.Subnetwork

    @classmethod
    def for_stack(
        cls, config: StackConfig, network: gcp.compute.Network, subnetwork: gcp.compute.Subnetwork
    ) -> GkeClusterArgs:
        return cls(
            **placement(config),
            cluster_name=config.cluster_name,
            control_plane_cidr=config.network.control_plane_cidr,
            authorized_networks=tuple(config.authorized_networks),
            settings=config.cluster,
            network=network,
            subnetwork=subnetwork,
        )


# A CI deployer holds its service-account roles on the stack's own accounts, not on the project
# (docs/ci-setup.md "Why the service-account roles are granted on the accounts"), so its setup
# creates them before the first `pulumi up`; the provider then takes the existing account on the
# create's 409 instead of failing (terraform-provider-google resource_google_service_account.go,
# `create_ignore_already_exists`). With no such account the create works as before.
ADOPT_EXISTING_ACCOUNT: dict[str, Any] = {"create_ignore_already_exists": True}


def node_service_account_args(config: GkeClusterArgs) -> dict[str, Any]:
    return {
        "account_id": f"{config.name_prefix}-nodes",
        "project": config.project,
        "display_name": f"rl-on-gke {config.name_prefix} GKE nodes",
        **ADOPT_EXISTING_ACCOUNT,
    }


def node_security(service_account: pulumi.Input[str]) -> dict[str, Any]:
    """Node settings shared by every pool: own service account, metadata server, secure boot."""
    return {
        "service_account": service_account,
        "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
        # GKE metadata server: pods see their Workload Identity, never the node's credentials.
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "shielded_instance_config": {
            "enable_secure_boot": True,
            "enable_integrity_monitoring": True,
        },
        "metadata": {"disable-legacy-endpoints": "true"},
        "image_type": "COS_CONTAINERD",
        "gvnic": {"enabled": True},
    }


# A pool whose capacity is exactly its size (a reservation, spot stock, GPU quota) cannot get the
# extra node GKE's default surge upgrade (maxSurge 1, maxUnavailable 0) needs: the upgrade fails
# and GKE keeps retrying. Upgrading one node at a time in place needs no extra capacity
# (cluster-toolkit gke-node-pool/main.tf and gke-cluster/main.tf default to 0 / 1; reference 11).
IN_PLACE_UPGRADE = {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}
# The system pool is on-demand CPU capacity, so the surge node it needs is ordinary stock. Surge
# first: GKE creates the upgraded node before it drains an old one, so the pool never drops below
# its size and the cluster always keeps a node for the Ray head, kube-dns and konnectivity. With
# in-place (0 / 1) a one-node pool would be empty for the whole upgrade or auto-repair;
# cluster-toolkit uses 0 / 1 only for a system pool autoscaled between 2 and 10 nodes
# (modules/scheduler/gke-cluster variables.tf `system_node_pool_node_count` total_min_nodes 2,
# main.tf `upgrade_settings` max_surge 0 / max_unavailable 1). GKE docs "Surge upgrades": maxSurge
# 1 / maxUnavailable 0 is the default that keeps capacity.
SURGE_UPGRADE = {"strategy": "SURGE", "max_surge": 1, "max_unavailable": 0}


@dataclass(frozen=True)
class PoolPlace:
    """Where a node pool is: its name, the project, the cluster and the regional location."""

    name: str
    project: str
    cluster: pulumi.Input[str]
    location: str
    node_locations: list[str]


def node_pool_args(
    place: PoolPlace,
    node_count: int,
    node_config: dict[str, Any],
    upgrade_settings: dict[str, Any],
) -> dict[str, Any]:
    """Keyword args for gcp.container.NodePool that every pool of the stack shares: where it is,
    its size, node_security in its node config, GKE repairing and upgrading it."""
    return {
        "name": place.name,
        "project": place.project,
        "cluster": place.cluster,
        "location": place.location,
        "node_locations": place.node_locations,
        "node_count": node_count,
        "node_config": node_config,
        "management": {"auto_repair": True, "auto_upgrade": True},
        "upgrade_settings": dict(upgrade_settings),
    }


def control_plane_access(config: GkeClusterArgs) -> dict[str, Any]:
    """The IP endpoint's exposure: authorized networks, or private when only DNS access is wanted."""
    return {
        "private_cluster_config": {
            "enable_private_nodes": True,
            # With authorized networks the IP endpoint stays public but only for them, so `pulumi
            # up` and kubectl reach it from the deployer's machine (cluster-toolkit A4 blueprint).
            # With none (allowed only with the DNS endpoint on), the IP endpoint is private and
            # every client goes through the IAM-gated DNS endpoint.
            "enable_private_endpoint": not config.authorized_networks,
            "master_ipv4_cidr_block": config.control_plane_cidr,
        },
        "master_authorized_networks_config": {
            "cidr_blocks": [
                {"cidr_block": n.cidr_block, "display_name": n.display_name}
                for n in config.authorized_networks
            ],
            "gcp_public_cidrs_access_enabled": False,
        },
    }


def maintenance_policy(
    settings: MaintenanceSettings, region: str, now: datetime | None = None
) -> dict[str, Any]:
    """The cluster's maintenance policy at `now`; exclusions that have ended are dropped with a
    warning in the preview's output (components/maintenance.py), never an error."""
    now = now or utc_now()
    _, ended = active_exclusions(settings, now)
    if ended:
        pulumi.log.warn(ended_exclusions_warning(ended, now))
    return maintenance_policy_args(settings, region, now)


def cluster_args(
    config: GkeClusterArgs,
    network: pulumi.Input[str],
    subnetwork: pulumi.Input[str],
    service_account: pulumi.Input[str],
) -> dict[str, Any]:
    return {
        "name": config.cluster_name,
        "project": config.project,
        # Regional control plane (HA through upgrades), nodes in the GPU zone only.
        "location": config.region,
        "node_locations": [config.zone],
        "network": network,
        "subnetwork": subnetwork,
        "networking_mode": "VPC_NATIVE",
        "ip_allocation_policy": {
            "cluster_secondary_range_name": PODS_RANGE_NAME,
            "services_secondary_range_name": SERVICES_RANGE_NAME,
        },
        # Pools are managed separately; the default pool would otherwise run forever.
        "remove_default_node_pool": True,
        "initial_node_count": 1,
        "node_config": node_security(service_account),
        # Multi-networking requires Dataplane V2 (GKE multi-network docs).
        "datapath_provider": "ADVANCED_DATAPATH",
        "enable_multi_networking": True,
        **control_plane_access(config),
        # The DNS endpoint authenticates every request with IAM (container.clusters.connect);
        # with it closed, only the IP endpoint and its authorized networks remain (GKE "About
        # network isolation": DNS-based endpoint).
        "control_plane_endpoints_config": {
            "dns_endpoint_config": {"allow_external_traffic": config.settings.dns_endpoint},
        },
        "workload_identity_config": {"workload_pool": f"{config.project}.svc.id.goog"},
        "release_channel": {"channel": config.settings.release_channel},
        # When auto-upgrades may run, and exclusions for training campaigns (maintenance.py).
        "maintenance_policy": maintenance_policy(config.settings.maintenance, config.region),
        # Stated, not left to the default, because config validation sizes the pods range by it
        # (components/capacity.py).
        "default_max_pods_per_node": MAX_PODS_PER_NODE,
        "min_master_version": config.settings.min_master_version,
        "enable_shielded_nodes": True,
        "addons_config": {
            "lustre_csi_driver_config": {"enabled": True, "enable_legacy_lustre_port": False},
            "ray_operator_configs": [
                {
                    "enabled": True,
                    "ray_cluster_logging_config": {"enabled": True},
                    "ray_cluster_monitoring_config": {"enabled": True},
                }
            ],
            "gce_persistent_disk_csi_driver_config": {"enabled": True},
        },
        "monitoring_config": {
            "enable_components": ["SYSTEM_COMPONENTS", "DCGM"],
            "managed_prometheus": {"enabled": True},
        },
        "logging_config": {"enable_components": ["SYSTEM_COMPONENTS", "WORKLOADS"]},
        # pulumi-gcp defaults this to true, which makes `pulumi destroy` fail; the stack decides.
        "deletion_protection": config.settings.deletion_protection,
    }


def system_pool_args(
    config: GkeClusterArgs, cluster: pulumi.Input[str], service_account: pulumi.Input[str]
) -> dict[str, Any]:
    return node_pool_args(
        PoolPlace(SYSTEM_POOL_NAME, config.project, cluster, config.region, [config.zone]),
        node_count=config.settings.system_node_count,
        node_config={
            **node_security(service_account),
            "machine_type": config.settings.system_machine_type,
            "disk_type": "pd-balanced",
            "disk_size_gb": 200,
            "spot": False,
            # Without this GKE defaults to ANY_RESERVATION and the system pool could eat capacity
            # reserved for something else (the GPU pool's reservation included).
            "reservation_affinity": {"consume_reservation_type": "NO_RESERVATION"},
            "labels": {NODE_ROLE_LABEL: "system"},
        },
        # The Ray head lives here: a new node first, then the old one drained (SURGE_UPGRADE).
        upgrade_settings=SURGE_UPGRADE,
    )


def kubeconfig(name: str, endpoint: str, ca_certificate: str | None) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (no static credentials).

    Without a CA the server is the DNS endpoint, whose certificate is publicly trusted.
    """
    cluster: dict[str, str] = {"server": f"https://{endpoint}"}
    if ca_certificate:
        cluster["certificate-authority-data"] = ca_certificate
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install it with `gcloud components install gke-gcloud-auth-plugin`.",
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
    }
    return json.dumps(document, indent=2)


def _dns_endpoint(
    endpoints: gcp.container.outputs.ClusterControlPlaneEndpointsConfig,
) -> str | None:
    """The control plane's DNS name; only read when the stack turns the DNS endpoint on."""
    config = endpoints.dns_endpoint_config
    assert config is not None, "dnsEndpoint is on, so GKE reports its DNS endpoint config"
    return config.endpoint


class GkeCluster(pulumi.ComponentResource):
    """Node service account with minimal roles, the cluster, and the on-demand system pool."""

    node_service_account: gcp.serviceaccount.Account
    cluster: gcp.container.Cluster
    system_pool: gcp.container.NodePool
    system_pool_name: str
    kubeconfig: pulumi.Output[str]
    get_credentials_command: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("rl-on-gke:gcp:GkeCluster", name, None, opts)
        config = args
        child = pulumi.ResourceOptions(parent=self)

        self.node_service_account = gcp.serviceaccount.Account(
            f"{name}-nodes", **node_service_account_args(config), opts=child
        )
        grants = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1].replace('.', '-')}",
                project=config.project,
                role=role,
                member=self.node_service_account.member,
                opts=child,
            )
            for role in NODE_ROLES
        ]
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            **cluster_args(
                args, args.network.id, args.subnetwork.id, self.node_service_account.email
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                # Nodes log and pull images from their first boot.
                depends_on=grants,
                # With the default pool removed, GKE reports the first pool's settings as the
                # cluster's nodeConfig, a replace-forcing field: a refresh would otherwise plan to
                # replace the whole cluster (cluster-toolkit gke-cluster ignores it likewise).
                ignore_changes=["nodeConfig"],
                custom_timeouts=pulumi.CustomTimeouts(create="45m", update="60m", delete="45m"),
            ),
        )
        self.system_pool_name = SYSTEM_POOL_NAME
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            **system_pool_args(config, self.cluster.id, self.node_service_account.email),
            opts=child,
        )
        if config.settings.dns_endpoint:
            dns_endpoint = self.cluster.control_plane_endpoints_config.apply(_dns_endpoint)
            access = pulumi.Output.all(self.cluster.name, dns_endpoint, None)
        else:
            access = pulumi.Output.all(
                self.cluster.name,
                self.cluster.endpoint,
                self.cluster.master_auth.cluster_ca_certificate,
            )
        self.kubeconfig = pulumi.Output.secret(access.apply(lambda parts: kubeconfig(*parts)))
        self.get_credentials_command = self.cluster.name.apply(
            lambda cluster_name: get_credentials_command(
                cluster_name, config.region, config.project, config.settings.dns_endpoint
            )
        )
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "endpoint": self.cluster.endpoint,
                "kubeconfig": self.kubeconfig,
                "nodeServiceAccount": self.node_service_account.email,
            }
        )
