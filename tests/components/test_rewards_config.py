"""rewards.codeSandbox: off by default, and a stack that enables it is refused by key when unusable."""

from __future__ import annotations

from typing import Any

import pytest

from components.config import ConfigError, config_keys, parse_stack_config
from components.rewards_config import machine_shape
from tests.conftest import raw_from_stack

IMAGE = "us-docker.pkg.dev/example-project/rl/code-sandbox:1"


def _parse(stack_config: dict[str, Any], **sandbox: Any):
    stack_config["rl-on-gke:rewards"] = {"codeSandbox": sandbox}
    return parse_stack_config(raw_from_stack(stack_config))


def _problems(stack_config: dict[str, Any], **sandbox: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _parse(stack_config, **sandbox)
    return caught.value.problems


def test_off_by_default_and_read_from_the_rewards_key(config) -> None:
    sandbox = config.rewards.code_sandbox
    assert sandbox.enabled is False and config.code_sandbox_nodes == 0
    assert config_keys()["rewards"] == ("rl-on-gke", "rewards")


def test_enabled_with_an_image_takes_the_defaults(stack_config) -> None:
    sandbox = _parse(stack_config, enabled=True, image=IMAGE).rewards.code_sandbox
    assert (sandbox.machine_type, sandbox.node_count, sandbox.replicas, sandbox.concurrency) == (
        "n2-standard-8",
        2,
        2,
        4,
    )


def test_enabled_without_an_image_names_the_key_and_what_the_image_needs(stack_config) -> None:
    (problem,) = _problems(stack_config, enabled=True)
    assert problem.startswith("rl-on-gke:rewards.codeSandbox.image = <unset>: required when")
    assert (
        "pydantic 2, g++ and util-linux" in problem and "images/code-sandbox/Dockerfile" in problem
    )


def test_an_image_may_be_left_out_while_off(stack_config) -> None:
    assert _parse(stack_config, enabled=False).rewards.code_sandbox.image is None


@pytest.mark.parametrize(
    "machine",
    ["e2-medium", "a3-highgpu-8g", "t2a-standard-8", "n2-custom-8-32768", "N2-standard-8"],
)
def test_machine_types_gke_sandbox_cannot_or_should_not_run_are_refused(
    stack_config, machine: str
) -> None:
    (problem,) = _problems(stack_config, enabled=True, image=IMAGE, machineType=machine)
    assert problem.startswith(
        f"rl-on-gke:rewards.codeSandbox.machineType = {machine!r}: must be <series>-"
    )
    assert "shared-core types are not allowed" in problem


def test_a_machine_too_small_for_one_executor_is_refused(stack_config) -> None:
    (problem,) = _problems(stack_config, enabled=True, image=IMAGE, machineType="n2-standard-4")
    assert problem.startswith(
        "rl-on-gke:rewards.codeSandbox.machineType = 'n2-standard-4': cannot hold one executor"
    )


def test_more_replicas_than_the_nodes_hold_names_the_limit(stack_config) -> None:
    (problem,) = _problems(stack_config, enabled=True, image=IMAGE, nodeCount=1, replicas=2)
    assert problem == (
        "rl-on-gke:rewards.codeSandbox.replicas = 2: at most 1: 1 node(s) (rl-on-gke:rewards.codeSandbox.nodeCount) "
        "of n2-standard-8 hold 1 executor(s) each; raise nodeCount or the machine size"
    )
    assert (
        _parse(
            stack_config,
            enabled=True,
            image=IMAGE,
            nodeCount=1,
            replicas=3,
            machineType="n2-standard-16",
        ).rewards.code_sandbox.replicas
        == 3
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nodeCount", 0),
        ("replicas", 0),
        ("concurrency", 0),
        ("enabled", "yes"),
        ("image", "not an image"),
        ("cpu", 4),
    ],
)
def test_bad_values_and_unknown_keys_are_named(stack_config, key: str, value: Any) -> None:
    (problem,) = _problems(stack_config, **{"enabled": True, "image": IMAGE, key: value})
    assert problem.startswith(f"rl-on-gke:rewards.codeSandbox.{key}")


@pytest.mark.parametrize(
    ("machine", "shape"),
    [("n2-standard-8", (8, 24)), ("n2-highmem-16", (16, 128)), ("c3-highcpu-22", (22, 22))],
)
def test_machine_shape_reads_vcpus_from_the_name(machine: str, shape: tuple[int, int]) -> None:
    assert machine_shape(machine) == shape
