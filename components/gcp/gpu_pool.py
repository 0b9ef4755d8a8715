"""The A4 / A3 Ultra GPU node pool: spot, reservation, on-demand or flex-start, static or autoscaled
from zero, with 1 gVNIC + 8 RDMA NICs.

Extra NIC order matters: the node's eth1 is the gVNIC and eth2..eth9 are RDMA 0..7, which is
what the RayCluster's `networking.gke.io/interfaces` annotation assumes (components/k8s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import GpuSettings, StackConfig
from components.contract import NODE_ROLE_LABEL
from components.gcp.cluster import IN_PLACE_UPGRADE, PoolPlace, node_pool_args, node_security
from components.gcp.image_streaming import streaming_node_config
from components.gcp.network import GpuNics
from components.gcp.placement import location

GPU_POOL_NAME = "gpu"
# Inputs whose change would replace the pool but that never need to change on their own:
# `ephemeral_storage_local_ssd_config` is ForceNew (terraform-provider-google-beta
# google-beta/services/container/node_config.go, schemaNodeConfig, ForceNew on the block and its
# local_ssd_count) and follows the machine type, so a pool deployed before it was set would
# otherwise be planned for replacement, and create-before-delete of the fixed-name `gpu` pool fails
# with 409. cluster-toolkit ignores it the same way (modules/compute/gke-node-pool/main.tf line 314,
# "Ignore local/ephemeral ssd configs as they are tied to machine types"). A machine-type change
# still replaces the pool through guest_accelerators[].type (tools/force_new.py).
GPU_POOL_IGNORED = ("nodeConfig.ephemeralStorageLocalSsdConfig",)
# GKE gives every flex-start pool the SHORT_LIVED upgrade strategy (GKE "About flex-start VMs":
# nodes are never upgraded in place, they are replaced when their run ends), while the provider
# accepts only SURGE or BLUE_GREEN (terraform-provider-google-beta
# google-beta/services/container/resource_container_node_pool.go line 471 at 93c65b2d60fe): any
# setting the program wrote would show as a diff on every preview. So a flex-start pool sets none
# and ignores what GKE reports.
FLEX_START_IGNORED = ("upgradeSettings",)
# GKE refuses an autoscaling pool whose maximum is zero ("max_node_count and total_max_node_count
# cannot be both set to zero", terraform-google-kubernetes-engine#1554), so a parked autoscaled
# pool (flex-start, or any mode with gpu.scaling on-demand) keeps a ceiling of one node: it stays
# empty because no Ray worker asks for a GPU (the RayCluster's worker group allows 0 workers when
# parked, components/k8s/raycluster.py).
PARKED_AUTOSCALED_MAX_NODES = 1
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}


@dataclass(frozen=True)
class GpuNodePoolArgs:
    """What the GPU pool reads of the stack (`gpu.*` and where), and what it attaches to."""

    project: str
    region: str
    zone: str
    gpu: GpuSettings
    cluster: gcp.container.Cluster
    service_account: pulumi.Input[str]
    nics: GpuNics

    @classmethod
    def for_stack(
        cls,
        config: StackConfig,
        cluster: gcp.container.Cluster,
        service_account: pulumi.Input[str],
        nics: GpuNics,
    ) -> GpuNodePoolArgs:
        return cls(
            **location(config),
            gpu=config.gpu,
            cluster=cluster,
            service_account=service_account,
            nics=nics,
        )


def reservation_affinity(gpu: GpuSettings, project: str) -> dict[str, Any]:
    if gpu.provisioning == "reservation":
        assert gpu.reservation is not None  # guaranteed by GpuSettings validation
        reservation = gpu.reservation
        if not reservation.startswith("projects/"):
            # The full path also works for reservations shared from another project.
            reservation = f"projects/{project}/reservations/{reservation}"
        return {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [reservation],
        }
    # Spot and flex-start pools must not consume reservations (GKE rejects it; cluster-toolkit
    # gke-node-pool main.tf preconditions); on-demand pools should not silently eat capacity
    # reserved for something else.
    return {"consume_reservation_type": "NO_RESERVATION"}


def autoscaling(gpu: GpuSettings) -> dict[str, Any]:
    """GKE's cluster autoscaler between 0 and nodeCount: it adds a node when a Ray worker pod
    cannot be scheduled for want of a GPU node and removes one whose worker is gone. Total
    (not per-zone) limits with location policy ANY, as GKE's flex-start and Spot guides create
    them: the pool is single-zone, and ANY takes capacity wherever it is."""
    return {
        "total_min_node_count": 0,
        "total_max_node_count": max(gpu.node_count, PARKED_AUTOSCALED_MAX_NODES),
        "location_policy": "ANY",
    }


def flex_start_args(gpu: GpuSettings) -> dict[str, Any]:
    """What a flex-start (Dynamic Workload Scheduler) pool changes, as cluster-toolkit requires it
    (modules/compute/gke-node-pool/main.tf lines 416-429: auto-repair off, no static node count,
    NO_RESERVATION, never spot) and GKE's flex-start guide creates it (autoscaling from zero,
    location policy ANY): GKE adds nodes, up to nodeCount, when the Ray workers ask for GPUs."""
    node_config: dict[str, Any] = {"flex_start": True}
    if gpu.max_run_duration_hours is not None:
        node_config["max_run_duration"] = f"{gpu.max_run_duration_hours * 3600}s"
    return {
        "initial_node_count": 0,
        "autoscaling": autoscaling(gpu),
        "management": {"auto_repair": False, "auto_upgrade": True},
        "node_config": node_config,
    }


def gpu_pool_ignored(gpu: GpuSettings) -> list[str]:
    """Inputs the pool does not diff on: GKE-decided ones, per capacity mode."""
    extra = FLEX_START_IGNORED if gpu.provisioning == "flex-start" else ()
    return [*GPU_POOL_IGNORED, *extra]


def additional_networks(nics: GpuNics) -> list[dict[str, Any]]:
    return [{"network": nics.gvnic_network, "subnetwork": nics.gvnic_subnet}] + [
        {"network": nics.rdma_network, "subnetwork": subnet} for subnet in nics.rdma_subnets
    ]


def gpu_pool_args(
    config: GpuNodePoolArgs,
    cluster: pulumi.Input[str],
    service_account: pulumi.Input[str],
    extra_networks: list[dict[str, Any]],
) -> dict[str, Any]:
    gpu = config.gpu
    machine = gpu.machine
    args = node_pool_args(
        PoolPlace(GPU_POOL_NAME, config.project, cluster, config.region, [config.zone]),
        # Static: nodeCount nodes up (NeMo RL and veRL are not elastic; the RayCluster pins
        # min = max). Autoscaled modes replace it below.
        node_count=gpu.node_count,
        node_config={
            **node_security(service_account),
            "machine_type": machine.machine_type,
            "disk_type": machine.boot_disk_type,
            "disk_size_gb": machine.boot_disk_size_gb,
            "guest_accelerators": [
                {
                    "type": machine.accelerator_type,
                    "count": machine.gpus_per_node,
                    # GKE installs the driver it tested for the node version.
                    "gpu_driver_installation_config": {"gpu_driver_version": "DEFAULT"},
                }
            ],
            # The bundled Local SSDs back the node's ephemeral storage (images, emptyDirs, the
            # Ray workers' /tmp/ray), so logs and object spilling never fill the boot disk
            # (cluster-toolkit gke-node-pool/disk_definitions.tf; reference 11).
            **(
                {"ephemeral_storage_local_ssd_config": {"local_ssd_count": machine.local_ssd_count}}
                if machine.local_ssd_count
                else {}
            ),
            "spot": gpu.provisioning == "spot",
            "reservation_affinity": reservation_affinity(gpu, config.project),
            "taints": [GPU_TAINT],
            "labels": {NODE_ROLE_LABEL: "gpu", "rl-on-gke/provisioning": gpu.provisioning},
        },
        # Spot stock, a reservation sized to the pool and GPU quota all leave no room for a
        # surge node, so every GPU pool upgrades in place, one node at a time (cluster.py).
        upgrade_settings=IN_PLACE_UPGRADE,
    )
    args["network_config"] = {"additional_node_network_configs": extra_networks}
    # The framework image streams from the stack's remote repository (image_streaming.py).
    args["node_config"].update(streaming_node_config(config.project, gpu.image_cache_disk))
    if gpu.compact_placement:
        # Compact placement is single-zone only, which the pool already is; with flex-start it
        # is supported for A3 Ultra and A4 (cluster-toolkit gke-node-pool main.tf precondition).
        args["placement_policy"] = {"type": "COMPACT"}
    if gpu.provisioning == "flex-start":
        flex = flex_start_args(gpu)
        del args["node_count"]
        del args["upgrade_settings"]
        args["node_config"].update(flex.pop("node_config"))
        args.update(flex)
    elif gpu.scales_on_demand:
        # 0..nodeCount, nodes added when Ray's autoscaler asks for GPU workers (gpu.scaling).
        # No node_count (the autoscaler owns the size; the provider documents node_count as not
        # to be used alongside autoscaling) and no initial_node_count: it is ForceNew
        # (terraform-provider-google-beta resource_container_node_pool.go, tools/force_new.py),
        # so setting it would replace a pool deployed static; the provider creates a new pool
        # with 0 nodes when neither is given.
        del args["node_count"]
        args["autoscaling"] = autoscaling(gpu)
    return args


class GpuNodePool(pulumi.ComponentResource):
    """One pool of 8-GPU nodes attached to the gVNIC and RDMA VPCs."""

    node_pool: gcp.container.NodePool

    def __init__(
        self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:GpuNodePool", name, None, opts)
        extra = additional_networks(args.nics)
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            **gpu_pool_args(args, args.cluster.id, args.service_account, extra),
            opts=pulumi.ResourceOptions(
                parent=self,
                # Spot and reserved GPU capacity can take long to be granted.
                custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="30m"),
                ignore_changes=gpu_pool_ignored(args.gpu),
            ),
        )
        self.register_outputs(
            {
                "poolName": self.node_pool.name,
                "nodeCount": args.gpu.node_count,
                "scaling": args.gpu.scaling_mode,
            }
        )
