"""The stack's image settings: `images.<name>.digest`, one per catalogue image (pure pydantic).

A digest the catalogue cannot vouch for is the user's to give: the preview refuses a stack that
runs an image without one, naming the key (components/stack_images.py).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from components.catalogue import IMAGES
from components.registry import (
    DIGEST,
)
from components.rules import Settings, matches


class ImageSettings(Settings):
    """One catalogue image's pin for this stack: the digest its tag was read at."""

    digest: Annotated[str, matches(DIGEST, "must be sha256:<64 lowercase hex digits>")]


def _known(value: dict[str, ImageSettings]) -> dict[str, ImageSettings]:
    unknown = sorted(set(value) - set(IMAGES))
    if unknown:
        raise ValueError(f"unknown image {unknown[0]!r}; the catalogue has {', '.join(IMAGES)}")
    return value


# `rl-on-gke:images`: catalogue image name -> its pin for this stack.
ImageDigests = Annotated[dict[str, ImageSettings], AfterValidator(_known)]
