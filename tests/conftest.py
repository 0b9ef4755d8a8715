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


# ------------------------------------------------------------------------- the slow seams

_RAY_FIXTURES = {"ray_head", "ray_url", "ray_client"}
_CLI_CALLS = ("run_cli(", '"-m", "jobs"')


def _source(item: pytest.Item) -> str:
    import inspect

    try:
        return inspect.getsource(item.function)  # type: ignore[attr-defined]
    except (OSError, TypeError, AttributeError):
        return ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the slow seams it crosses, from what it uses: a real Ray cluster
    (its fixtures, or a head or GPU raylet it starts), the CLI as a subprocess, the real
    compiler (everything under tests/jobs/rewards/ runs programs in the sandbox)."""
    for item in items:
        src = _source(item)
        if _RAY_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
            word in src for word in ("localray.", "GpuNode(")
        ):
            item.add_marker(pytest.mark.ray)
        if any(call in src for call in _CLI_CALLS):
            item.add_marker(pytest.mark.subprocess_cli)
        if "tests/jobs/rewards/" in item.nodeid or "g++" in src:
            item.add_marker(pytest.mark.compiler)
