"""Where a stack's pods pull their images from: the stack's Artifact Registry remote repositories, by digest, and what GKE image streaming accepts (pure, no Pulumi).

GKE streams an image only from Artifact Registry (a standard or remote repository) or public
Docker Hub (GKE "Use Image streaming", Requirements). nvcr.io, registry.k8s.io and gke.gcr.io
images are not eligible as pulled directly, so every image goes through a remote repository in
the cluster's region that caches its upstream; pods name it by digest, never by tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from components.catalogue import IMAGES, ImagePin

# The stack file's namespace (components/rules.py NAMESPACE), spelt here so the policy pack can
# import this module without pydantic.
NAMESPACE = "rl-on-gke"

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
# Artifact Registry repository IDs: lowercase letters, digits and hyphens, starting with a letter
# and ending with a letter or digit, at most 63 characters (Artifact Registry "Create standard
# repositories": repository naming; terraform-provider-google artifactregistry repository_id).
REPOSITORY_ID = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# A disk image the node's secondary boot disk is made from: bare name, `global/images/NAME` or
# `projects/PROJECT/global/images/NAME` (GKE "Use secondary boot disks to preload data or
# container images": --secondary-boot-disk=disk-image=global/images/DISK_IMAGE_NAME).
DISK_IMAGE = re.compile(
    r"^(?:projects/(?P<project>[a-z][-a-z0-9]{4,28}[a-z0-9])/)?(?:global/images/)?"
    r"(?P<name>[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"
)
# Hosts GKE image streaming reads (see module docstring).
_STREAMABLE_HOST = re.compile(r"^(?:[a-z0-9-]+-docker\.pkg\.dev|docker\.io)$")


@dataclass(frozen=True)
class RemoteUpstream:
    """One upstream registry and the remote repository that mirrors it."""

    suffix: str  # the repository ID is `<prefix>-<suffix>`
    description: str
    # `remote_repository_config.docker_repository`: Docker Hub is a preset
    # (`public_repository = "DOCKER_HUB"`); any other registry is a custom upstream by URI
    # (pulumi-gcp RepositoryRemoteRepositoryConfigDockerRepositoryArgs).
    docker_hub: bool = False
    uri: str | None = None

    def docker_repository(self) -> dict[str, object]:
        if self.docker_hub:
            return {"public_repository": "DOCKER_HUB"}
        return {"custom_repository": {"uri": self.uri}}


UPSTREAMS: dict[str, RemoteUpstream] = {
    "nvcr.io": RemoteUpstream("nvcr", "NVIDIA NGC (nvcr.io)", uri="https://nvcr.io"),
    "docker.io": RemoteUpstream("docker-hub", "Docker Hub", docker_hub=True),
    "registry.k8s.io": RemoteUpstream(
        "k8s", "Kubernetes images (registry.k8s.io)", uri="https://registry.k8s.io"
    ),
    "gke.gcr.io": RemoteUpstream("gke", "GKE images (gke.gcr.io)", uri="https://gke.gcr.io"),
}


def repository_id(prefix: str, pin: ImagePin) -> str:
    return f"{prefix}-{UPSTREAMS[pin.registry].suffix}"


def repository_problem(prefix: str) -> str | None:
    """Why the remote repositories named after `prefix` would be refused by GCP, or None."""
    for upstream in UPSTREAMS.values():
        repo = f"{prefix}-{upstream.suffix}"
        if not REPOSITORY_ID.match(repo):
            return (
                f"{NAMESPACE}:namePrefix = {prefix!r}: names the Artifact Registry repository "
                f"{repo!r}, which GCP refuses (lowercase letters, digits and '-', starting with a "
                "letter, ending with a letter or digit, at most 63 characters)"
            )
    return None


@dataclass(frozen=True)
class StackImages:
    """Each image a stack runs, as its pods name it: `<region>-docker.pkg.dev/<project>/<repo>/<path>@<digest>`."""

    project: str
    region: str
    prefix: str
    digests: dict[str, str]  # image name -> sha256:..., from the stack or the catalogue

    def ref(self, name: str) -> str:
        pin = IMAGES[name]
        host = f"{self.region}-docker.pkg.dev"
        repo = repository_id(self.prefix, pin)
        return f"{host}/{self.project}/{repo}/{pin.path}@{self.digests[name]}"


def used_images(framework: str, grafana: bool) -> tuple[str, ...]:
    """The catalogue images a stack runs: its framework's, the CRD gate's, and the metrics UI's."""
    return (framework, "kubectl", *(("grafana", "query-frontend") if grafana else ()))


def digest_problems(used: tuple[str, ...], given: dict[str, str]) -> list[str]:
    """One line per used image with no digest from the stack nor a verified one in the catalogue."""
    problems = []
    for name in used:
        pin = IMAGES[name]
        if name not in given and pin.digest is None:
            problems.append(
                f"{NAMESPACE}:images.{name}.digest: required, {pin.upstream_ref} has no verified "
                "digest in the catalogue; read it with `crane digest "
                f"{pin.upstream_ref}` and run `pulumi config set --path "
                f"'images.{name}.digest' sha256:...`"
            )
    return problems


def resolved_digests(used: tuple[str, ...], given: dict[str, str]) -> dict[str, str]:
    """The digest of each used image: the stack's when it sets one, else the catalogue's."""
    out = {}
    for name in used:
        digest = given.get(name) or IMAGES[name].digest
        if digest is None:
            raise ValueError(digest_problems((name,), given)[0])
        out[name] = digest
    return out


def unstreamable(images: list[str]) -> list[str]:
    """The images GKE would not stream (not in Artifact Registry nor on Docker Hub, or by tag)."""
    out = []
    for image in images:
        host = image.split("/", 1)[0] if "/" in image else "docker.io"
        if not _STREAMABLE_HOST.match(host) or "@sha256:" not in image:
            out.append(image)
    return out


# An image a stack builds itself (rewards.codeSandbox.image): in an Artifact Registry repository,
# by digest, so the sandbox pool streams it and a moved tag cannot change it.
OWN_IMAGE = re.compile(r"^[a-z0-9-]+-docker\.pkg\.dev/[^@:]+@sha256:[0-9a-f]{64}$")


def own_image_problem(key: str, value: str) -> str | None:
    if OWN_IMAGE.match(value):
        return None
    return (
        f"{NAMESPACE}:{key} = {value!r}: must be an Artifact Registry image by digest, "
        "<location>-docker.pkg.dev/<project>/<repo>/<name>@sha256:<64 hex> (push your build "
        "there; docs/deploy.md 'Image digests')"
    )


def disk_image_problem(value: str, project: str) -> str | None:
    """Why `gpu.imageCacheDisk` cannot back the GPU pool's secondary boot disk, or None.

    Disk images are global resources of one project; GKE uses an image of another project only
    when the cluster allow-lists it, which this program does not (GKE "Use secondary boot disks":
    "Configure the secondary boot disk from a different project"). Regional or zonal paths are
    disks or snapshots, not images.
    """
    match = DISK_IMAGE.match(value)
    key = f"{NAMESPACE}:gpu.imageCacheDisk = {value!r}"
    if match is None:
        return (
            f"{key}: must be a disk image of this project, as NAME, global/images/NAME or "
            f"projects/{project}/global/images/NAME (a disk image is global; no region or zone path)"
        )
    if match["project"] is not None and match["project"] != project:
        return (
            f"{key}: the image is in project {match['project']!r}, the cluster in {project!r}; "
            "build the disk image in the cluster's project (docs/deploy.md 'Image cache disk')"
        )
    return None


def disk_image_path(value: str, project: str) -> str:
    match = DISK_IMAGE.match(value)
    assert match is not None  # checked by disk_image_problem at config time
    return f"projects/{project}/global/images/{match['name']}"
