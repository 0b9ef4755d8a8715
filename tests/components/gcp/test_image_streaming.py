"""The GPU and sandbox pools stream their images from the stack's remote repositories, by digest; an image cache disk rides on the GPU pool."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from components.gcp.image_streaming import CONTAINER_IMAGE_CACHE, streaming_node_config
from tools.render import Rendering, load_stack_file, render

pytestmark = pytest.mark.plan

POOL = "gcp:container/nodePool:NodePool"
REGIONS = {"dev": "us-east1", "h200": "us-central1"}
SANDBOX_IMAGE = "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64
# The gIB NCCL installer DaemonSet keeps its upstream images (components/k8s/nccl.py), not yet
# routed through the remote repositories: the installer is already in Artifact Registry
# (gce-ai-infra), the pause image is pinned by digest, the sysctl alpine by tag.
NCCL_INSTALLER = "-nccl-daemonset"


@cache
def _rendered(stack: str, **changes: str) -> Rendering:
    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", "example-project")
    if "disk" in changes:
        config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "imageCacheDisk": changes["disk"]}
    if "sandbox" in changes:
        config["rl-on-gke:rewards"] = {"codeSandbox": {"enabled": True, "image": SANDBOX_IMAGE}}
        config["rl-on-gke:codeSandboxToken"] = "sandbox-token-" + "0" * 24
        secret_keys = (*secret_keys, "rl-on-gke:codeSandboxToken")
    return render(config, stack=stack, secret_keys=secret_keys)


def _pool(rendering: Rendering, name: str) -> dict[str, Any]:
    (pool,) = [r.inputs for r in rendering.of_type(POOL) if r.inputs["name"] == name]
    return pool


def _images(value: Any) -> list[str]:
    """Every `image` of every container in a manifest, however deep."""
    found: list[str] = []
    if isinstance(value, dict):
        if isinstance(value.get("image"), str) and "name" in value:
            found.append(value["image"])
        for item in value.values():
            found += _images(item)
    elif isinstance(value, list):
        for item in value:
            found += _images(item)
    return found


@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_the_gpu_pool_streams_its_images(stack: str) -> None:
    node_config = _pool(_rendered(stack), "gpu")["nodeConfig"]
    assert node_config["gcfsConfig"] == {"enabled": True}
    assert "secondaryBootDisks" not in node_config


@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_every_image_the_program_runs_is_its_regional_remote_repository_by_digest(
    stack: str,
) -> None:
    pattern = re.compile(
        rf"^{REGIONS[stack]}-docker\.pkg\.dev/example-project/rl-{stack}-"
        r"(nvcr|docker-hub|k8s|gke)/[a-z0-9/._-]+@sha256:[0-9a-f]{64}$"
    )
    seen = []
    for resource in _rendered(stack).resources:
        if not resource.type.startswith("kubernetes:") or NCCL_INSTALLER in resource.name:
            continue
        for image in _images(resource.inputs):
            seen.append(image)
            assert pattern.match(image), f"{resource.name}: {image}"
    # The framework image (head and workers), Grafana, the query frontend and the CRD gate.
    assert {i.split("/")[2].removeprefix(f"rl-{stack}-") for i in seen} == {
        "nvcr" if stack == "dev" else "docker-hub",
        "docker-hub",
        "gke",
        "k8s",
    }


def test_the_sandbox_pool_streams_the_sandbox_image_by_digest() -> None:
    rendering = _rendered("dev", sandbox="on")
    assert _pool(rendering, "code-sandbox")["nodeConfig"]["gcfsConfig"] == {"enabled": True}
    rendered = json.dumps([r.inputs for r in rendering.resources if "sandbox" in r.name])
    assert SANDBOX_IMAGE in rendered


@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_an_image_cache_disk_becomes_the_gpu_pools_secondary_boot_disk(stack: str) -> None:
    node_config = _pool(_rendered(stack, disk="nemo-rl-cache"), "gpu")["nodeConfig"]
    assert node_config["gcfsConfig"] == {"enabled": True}
    assert node_config["secondaryBootDisks"] == [
        {
            "diskImage": "projects/example-project/global/images/nemo-rl-cache",
            "mode": CONTAINER_IMAGE_CACHE,
        }
    ]


def test_the_cache_disk_never_comes_without_streaming() -> None:
    # GKE uses a CONTAINER_IMAGE_CACHE disk only with image streaming on.
    config = streaming_node_config("proj-123", "cache")
    assert config["gcfs_config"] == {"enabled": True} and config["secondary_boot_disks"]
