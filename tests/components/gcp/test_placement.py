"""The location and placement the GCP builders' args copy from the stack."""

from __future__ import annotations

from components.gcp.placement import location, placement


def test_location_is_the_stacks_project_region_and_zone(config) -> None:
    assert location(config) == {
        "project": "example-project",
        "region": "us-east1",
        "zone": "us-east1-b",
    }


def test_placement_adds_the_name_prefix_to_the_location(config) -> None:
    assert placement(config) == {**location(config), "name_prefix": "rl-test"}
