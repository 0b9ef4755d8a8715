"""The placement the GCP builders' args copy from the stack."""

from __future__ import annotations

from components.gcp.placement import placement


def test_placement_is_the_stacks_project_region_zone_and_name_prefix(config) -> None:
    assert placement(config) == {
        "project": "example-project",
        "region": "us-east1",
        "zone": "us-east1-b",
        "name_prefix": "rl-test",
    }
