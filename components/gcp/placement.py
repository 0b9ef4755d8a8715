"""Where a stack's GCP resources go and what their names start with, as the builders' args take it."""

from __future__ import annotations

from typing import TypedDict

from components.config import StackConfig


class Placement(TypedDict):
    """The project, region, zone and name prefix: the fields every GCP builder's args copy first."""

    project: str
    region: str
    zone: str
    name_prefix: str


def placement(config: StackConfig) -> Placement:
    return Placement(
        project=config.project,
        region=config.region,
        zone=config.zone,
        name_prefix=config.name_prefix,
    )
