"""The stack's Artifact Registry remote repositories: one per upstream registry its images come from, in the cluster's region.

A remote repository caches what it pulls from its upstream; GKE nodes then pull (and stream,
components/gcp/image_streaming.py) the image from Artifact Registry in their own region instead
of the internet through Cloud NAT. The node service account reads them through its project-wide
`roles/artifactregistry.reader` (components/gcp/cluster.py NODE_ROLES).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.catalogue import IMAGES
from components.config import StackConfig
from components.registry import UPSTREAMS, RemoteUpstream, repository_id
from components.stack_images import stack_images


def remote_repository_args(
    project: str, region: str, repo_id: str, upstream: RemoteUpstream
) -> dict[str, Any]:
    """`gcp.artifactregistry.Repository` inputs of one Docker remote repository (pulumi-gcp
    RepositoryArgs / RepositoryRemoteRepositoryConfigArgs; Artifact Registry "Create remote
    repositories": format DOCKER, mode REMOTE_REPOSITORY)."""
    return {
        "project": project,
        "location": region,
        "repository_id": repo_id,
        "format": "DOCKER",
        "mode": "REMOTE_REPOSITORY",
        "description": f"rl-on-gke cache of {upstream.description}",
        "remote_repository_config": {
            "description": upstream.description,
            "docker_repository": upstream.docker_repository(),
        },
    }


@dataclass(frozen=True)
class RemoteRepositoriesArgs:
    project: str
    region: str
    # Repository ID -> its upstream, for the upstreams of the images this stack runs.
    repositories: dict[str, RemoteUpstream]

    @classmethod
    def for_stack(cls, config: StackConfig) -> RemoteRepositoriesArgs:
        images = stack_images(config)
        repos = {
            repository_id(images.prefix, IMAGES[name]): UPSTREAMS[IMAGES[name].registry]
            for name in images.digests
        }
        return cls(project=config.project, region=config.region, repositories=repos)


class RemoteRepositories(pulumi.ComponentResource):
    """The remote repositories the stack's images are pulled through."""

    repositories: list[gcp.artifactregistry.Repository]

    def __init__(
        self, name: str, args: RemoteRepositoriesArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:RemoteRepositories", name, None, opts)
        self.repositories = [
            gcp.artifactregistry.Repository(
                f"{name}-{repo_id}",
                **remote_repository_args(args.project, args.region, repo_id, upstream),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for repo_id, upstream in sorted(args.repositories.items())
        ]
        self.register_outputs({"repositories": sorted(args.repositories)})
