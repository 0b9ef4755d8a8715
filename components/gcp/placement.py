"""Where a stack's GCP resources go and what their names start with, as the builders' args take it."""

from __future__ import annotations

from typing import TypedDict

from components.config import StackConfig


class Location(TypedDict):
    """The project, region and zone, which the cluster's, the networks' and the pools' args copy."""

    project: str
    region: str
    zone: str


class Placement(Location):
    """The location and the name prefix, for the builders that name their resources after it."""

    name_prefix: str


def location(config: StackConfig) -> Location:
    return Location(project=config.project, region=config.region, zone=config.zone)


def placement(config: StackConfig) -> Placement:
    return Placement(**location(config), name_prefix=config.name_prefix)
