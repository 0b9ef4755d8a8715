"""Shared fixtures: valid stack configs to start from, and the mock-runtime recorder."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config import StackConfig, parse_stack_config, raw_config_from_pulumi

# A valid config in the shape a stack file has (full Pulumi keys, camelCase values).
BASE_STACK_CONFIG: dict[str, Any] = {
    "gcp:project": "example-project",
    "gcp:region": "us-east1",
    "rl-on-gke:zone": "us-east1-b",
    "rl-on-gke:gpu": {"machineType": "a4-highgpu-8g", "nodeCount": 2, "provisioning": "spot"},
    "rl-on-gke:lustre": {
        "capacityGib": 9000,
        "perUnitStorageThroughput": 1000,
        "filesystem": "lustrefs",
        "protect": False,
    },
    "rl-on-gke:authorizedNetworks": [{"cidrBlock": "203.0.113.0/24", "displayName": "office"}],
}


def raw_from_stack(stack_config: dict[str, Any], name_prefix: str = "rl-test") -> dict[str, Any]:
    """Stack-file keys -> the raw mapping `parse_stack_config` takes, through the program's own
    reader (so the tests read exactly the keys the program reads)."""
    values = {"rl-on-gke:namePrefix": name_prefix, **stack_config}
    return raw_config_from_pulumi(lambda namespace, key: values.get(f"{namespace}:{key}"), "test")


@pytest.fixture
def stack_config() -> dict[str, Any]:
    """A fresh, mutable copy of a valid stack config."""
    return copy.deepcopy(BASE_STACK_CONFIG)


@pytest.fixture
def config(stack_config: dict[str, Any]) -> StackConfig:
    return parse_stack_config(raw_from_stack(stack_config))
