"""The stack's image settings (`images.<name>.digest`) and the image rules only the whole stack can check (pure pydantic).

A digest the catalogue cannot vouch for is the user's to give: the preview refuses a stack that
runs an image without one, naming the key (components/registry.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, field_validator

from components.catalogue import IMAGES
from components.registry import (
    DIGEST,
    StackImages,
    digest_problems,
    disk_image_problem,
    repository_problem,
    resolved_digests,
    used_images,
)
from components.rules import Settings, matching

if TYPE_CHECKING:
    from components.config import StackConfig


class ImageSettings(Settings):
    """One catalogue image's pin for this stack: the digest its tag was read at."""

    digest: str

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: str) -> str:
        return matching(DIGEST, value, "must be sha256:<64 lowercase hex digits>")


def _known(value: dict[str, ImageSettings]) -> dict[str, ImageSettings]:
    unknown = sorted(set(value) - set(IMAGES))
    if unknown:
        raise ValueError(f"unknown image {unknown[0]!r}; the catalogue has {', '.join(IMAGES)}")
    return value


# `rl-on-gke:images`: catalogue image name -> its pin for this stack.
ImageDigests = Annotated[dict[str, ImageSettings], AfterValidator(_known)]


def _used(config: StackConfig) -> tuple[str, ...]:
    return used_images(config.ray.framework, config.monitoring.grafana)


def _given(config: StackConfig) -> dict[str, str]:
    return {name: pin.digest for name, pin in config.images.items()}


def stack_image_problems(config: StackConfig) -> list[str]:
    """Every image rule of the stack, one line each: digests, repository names, the cache disk."""
    problems = digest_problems(_used(config), _given(config))
    repo = repository_problem(config.name_prefix)
    if repo:
        problems.append(repo)
    disk = config.gpu.image_cache_disk
    if disk is not None:
        problem = disk_image_problem(disk, config.project)
        if problem:
            problems.append(problem)
    return problems


def stack_images(config: StackConfig) -> StackImages:
    return StackImages(
        project=config.project,
        region=config.region,
        prefix=config.name_prefix,
        digests=resolved_digests(_used(config), _given(config)),
    )
