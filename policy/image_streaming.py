"""Guard rail on GKE image streaming: the GPU pool streams only images GKE can stream, and its image cache disk has streaming under it.

GKE streams an image only from Artifact Registry or public Docker Hub (GKE "Use Image
streaming", Requirements); any other image on a streaming pool is pulled whole, and a 20 GiB
framework image pulled through Cloud NAT is the quarter of an hour this pool exists to avoid. A
tag can move under a running pool, so only images named by digest count (components/registry.py).
A secondary boot disk in CONTAINER_IMAGE_CACHE mode works only with image streaming on (GKE "Use
secondary boot disks to preload data or container images").
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from components.contract import NODE_ROLE_LABEL
from components.registry import unstreamable
from policy.props import as_dict, as_list, dig, plain
from policy.ray_head import RAY_CLUSTER

NODE_POOL = "gcp:container/nodePool:NodePool"


def _gpu_pools(args: StackValidationArgs) -> list[tuple[str, dict[str, Any]]]:
    pools = []
    for resource in args.resources:
        if resource.resource_type != NODE_POOL:
            continue
        props = plain(resource.props)
        if as_dict(dig(props, "nodeConfig", "labels")).get(NODE_ROLE_LABEL) == "gpu":
            pools.append((resource.urn, props))
    return pools


def worker_images(ray_cluster: dict[str, Any]) -> list[str]:
    """Every image a RayCluster's worker groups (the GPU pods) run, init containers included."""
    images = []
    for group in as_list(dig(ray_cluster, "spec", "workerGroupSpecs")):
        spec = as_dict(dig(group, "template", "spec"))
        for key in ("initContainers", "containers"):
            for container in as_list(spec.get(key)):
                image = as_dict(container).get("image")
                if isinstance(image, str):
                    images.append(image)
    return images


def _gpu_pool_streams_eligible_images(args: StackValidationArgs, report: ReportViolation) -> None:
    for urn, pool in _gpu_pools(args):
        streams = dig(pool, "nodeConfig", "gcfsConfig", "enabled") is True
        caches = [
            disk
            for disk in as_list(dig(pool, "nodeConfig", "secondaryBootDisks"))
            if as_dict(disk).get("mode") == "CONTAINER_IMAGE_CACHE"
        ]
        if caches and not streams:
            report(
                "The GPU pool has an image cache disk (gpu.imageCacheDisk) but image streaming "
                "off: GKE uses CONTAINER_IMAGE_CACHE disks only with nodeConfig.gcfsConfig.enabled.",
                urn,
            )
        if not streams:
            continue
        for resource in args.resources:
            if resource.resource_type != RAY_CLUSTER:
                continue
            for image in sorted(set(unstreamable(worker_images(plain(resource.props))))):
                report(
                    f"The GPU pool streams its images, but the RayCluster's workers run {image}, "
                    "which GKE cannot stream (it must be in Artifact Registry or on Docker Hub, "
                    "named by @sha256 digest): pull it through the stack's remote repository "
                    "(components/registry.py).",
                    resource.urn,
                )


POLICIES = [
    StackValidationPolicy(
        name="gpu-pool-streams-eligible-images",
        description="A streaming GPU pool runs only images GKE can stream, by digest; an image cache disk needs streaming on.",
        validate=_gpu_pool_streams_eligible_images,
    ),
]
