"""Whether a cluster runs a recipe's framework: from the stack, --framework, or its Ray version.

A stack says which framework its Ray image is (`rayFramework`). A bare dashboard address only
says which Ray it runs (`GET /api/version` -> `ray_version`), and each framework image ships a
known Ray (`components.catalogue.FRAMEWORKS`): NeMo RL 0.4.0 has 2.46; the veRL vllm011 image
has a Ray of at least 2.48 (vLLM 0.11's floor; the exact patch is not pinned upstream), so any
Ray from 2.48 on counts as the veRL image's.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalogue import FRAMEWORKS
from jobs.common import commands
from jobs.common.errors import UsageError


@dataclass(frozen=True)
class Verdict:
    """`refuse` True: the recipe must not be submitted; `message` says why, or is a note."""

    refuse: bool
    message: str
    hint: str = ""


def major_minor(version: str) -> tuple[int, int] | None:
    parts = version.strip().split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def _mm(version: str) -> str:
    mm = major_minor(version)
    return f"{mm[0]}.{mm[1]}" if mm else version


def ray_matches(framework: str, cluster_ray: str) -> bool:
    """Whether `cluster_ray` is the Ray the framework's image ships (major.minor, or at/above
    the floor when only a floor is known)."""
    spec = FRAMEWORKS[framework]
    got = major_minor(cluster_ray)
    if got is None:
        return False
    if spec.ray_floor is not None:
        floor = major_minor(spec.ray_floor)
        return floor is not None and got >= floor
    return got == major_minor(spec.ray_version)


def _describe(framework: str) -> str:
    spec = FRAMEWORKS[framework]
    return f">= {_mm(spec.ray_floor)}" if spec.ray_floor else _mm(spec.ray_version)


def check_named(recipe_name: str, framework: str, running: str | None, source: str) -> None:
    """Refuse when a named source (a stack output, --framework) says another framework."""
    if running is not None and running != framework:
        raise UsageError(
            f"recipe {recipe_name} needs a {framework} cluster but {source} runs {running}",
            f"pick a {running} recipe ({commands.command('recipes')}) or a {framework} stack",
        )


def by_ray_version(
    recipe_name: str, framework: str, cluster_ray: str | None, source: str
) -> Verdict:
    """Refuse only on clear evidence: the cluster's Ray major.minor differs from the recipe's
    framework image and equals the other framework's. Anything else is a note, because a
    custom image may carry any Ray and skew between client and cluster works (reference §0.6).
    """
    flag = f"pass --framework {framework} to check it"
    if cluster_ray is None or major_minor(cluster_ray) is None:
        return Verdict(
            False, f"note: framework not checked ({source} reported no Ray version); {flag}"
        )
    others = [f for f in FRAMEWORKS if f != framework]
    # Only an exactly known Ray is evidence against a recipe: a floor (veRL: >= 2.48) also
    # covers every newer Ray, which custom images of any framework may carry.
    theirs = [f for f in others if FRAMEWORKS[f].ray_floor is None and ray_matches(f, cluster_ray)]
    own_match = ray_matches(framework, cluster_ray)
    if not own_match and theirs:
        other = theirs[0]
        return Verdict(
            True,
            f"recipe {recipe_name} needs a {framework} cluster (Ray {_describe(framework)}) but "
            f"{source} runs Ray {cluster_ray}, the Ray of the {other} image",
            f"pick a {other} recipe ({commands.command('recipes')}), or pass --framework "
            f"{framework} "
            f"if the cluster really runs {framework}",
        )
    if own_match:
        return Verdict(
            False,
            f"note: {source} runs Ray {cluster_ray}, as the {framework} image "
            f"does ({_describe(framework)}); framework not otherwise checked "
            f"({flag})",
        )
    return Verdict(
        False,
        f"note: framework not checked: {source} runs Ray {cluster_ray}, which no "
        f"framework image pins ({framework}: {_describe(framework)}); {flag}",
    )
