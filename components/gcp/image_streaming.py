"""What a node pool sets to stream its images (GKE image streaming) and, optionally, to boot with them preloaded (a secondary boot disk).

Image streaming (`node_config.gcfs_config.enabled`, pulumi-gcp NodePoolNodeConfigGcfsConfigArgs)
needs COS containerd nodes (cluster.py node_security), the Container File System API
(apis.py), Private Google Access on private nodes' subnet (network.py) and, for a custom node
service account, `roles/serviceusage.serviceUsageConsumer` (GKE "Use Image streaming",
Requirements). Unlike the secondary boot disk, it is not ForceNew: the provider updates it in
place (tools/force_new.py lists no gcfsConfig path), and GKE recreates the pool's nodes to apply it.

A secondary boot disk in CONTAINER_IMAGE_CACHE mode requires image streaming, and its disk image
is ForceNew (tools/force_new.py nodeConfig.secondaryBootDisks[].diskImage): changing it replaces
the pool (GKE "Use secondary boot disks to preload data or container images").
"""

from __future__ import annotations

from typing import Any

from components.registry import disk_image_path

CONTAINER_IMAGE_CACHE = "CONTAINER_IMAGE_CACHE"


def streaming_node_config(project: str, image_cache_disk: str | None = None) -> dict[str, Any]:
    """The `node_config` keys of a pool that streams its images, with the cache disk if given."""
    config: dict[str, Any] = {"gcfs_config": {"enabled": True}}
    if image_cache_disk is not None:
        config["secondary_boot_disks"] = [
            {
                "disk_image": disk_image_path(image_cache_disk, project),
                "mode": CONTAINER_IMAGE_CACHE,
            }
        ]
    return config
