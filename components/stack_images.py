"""The stack's images as its pods name them, and the image rules only the whole stack can check: digests, repository names, the cache disk."""

from __future__ import annotations

from components.config import StackConfig
from components.registry import (
    StackImages,
    digest_problems,
    disk_image_problem,
    own_image_problem,
    repository_problem,
    resolved_digests,
    used_images,
)


def _used(config: StackConfig) -> tuple[str, ...]:
    return used_images(config.ray.framework, config.monitoring.grafana)


def _given(config: StackConfig) -> dict[str, str]:
    return {name: pin.digest for name, pin in config.images.items()}


def stack_image_problems(config: StackConfig) -> list[str]:
    """Every image rule of the stack, one line each (stack_inputs.load_stack reports them)."""
    problems = digest_problems(_used(config), _given(config))
    repo = repository_problem(config.name_prefix)
    if repo:
        problems.append(repo)
    sandbox = config.rewards.code_sandbox
    if sandbox.enabled and sandbox.image is not None:
        own = own_image_problem("rewards.codeSandbox.image", sandbox.image)
        if own:
            problems.append(own)
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
