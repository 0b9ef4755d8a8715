"""Fixtures for the Kubernetes layer tests: stack configs for every machine type and framework."""

from __future__ import annotations

import itertools

import pytest

from components.catalogue import FRAMEWORKS, MACHINES
from components.config import StackConfig, parse_stack_config
from tests.conftest import BASE_STACK_CONFIG, raw_from_stack

COMBINATIONS = list(itertools.product(sorted(MACHINES), sorted(FRAMEWORKS)))


def make_config(
    machine_type: str = "a4-highgpu-8g",
    framework: str = "nemo-rl",
    node_count: int = 2,
    **gpu: object,
) -> StackConfig:
    raw = raw_from_stack(BASE_STACK_CONFIG)
    raw["gpu"] = {**raw["gpu"], "machineType": machine_type, "nodeCount": node_count, **gpu}
    raw["ray"] = {"framework": framework, "namespace": "rl-train"}
    return parse_stack_config(raw)


@pytest.fixture(params=COMBINATIONS, ids=[f"{m}-{f}" for m, f in COMBINATIONS])
def any_config(request: pytest.FixtureRequest) -> StackConfig:
    """One config per (machine type, framework) pair the catalogue offers."""
    machine_type, framework = request.param
    return make_config(machine_type, framework, node_count=3)


@pytest.fixture
def k8s_config() -> StackConfig:
    """An A4 / NeMo RL stack with two GPU nodes, namespace rl-train, prefix rl-test."""
    return make_config()
