"""Every GCP input key the program sets, nested ones included, is one pulumi-gcp declares.

The offline plans run under mocks, which accept any key; a misspelt or renamed nested key (say
`ephemeralStorageLocalSsdConfig.localSsdCount`) would only fail at a real `pulumi up`. This walks
the rendered inputs of both stacks against the SDK's own `*Args` input types, with their wire
names and type hints (`pulumi._types.input_type_py_to_pulumi_names` / `input_type_types`).
"""

from __future__ import annotations

import collections.abc
import importlib
import typing
from functools import cache
from typing import Any

import pytest
from pulumi import _types

from tools.render import Rendering, SecretValue, load_stack_file, render

STACKS = ("dev", "h200")
# A stack file with rewards.codeSandbox turned on: the gVisor pool is only rendered then.
SANDBOX = "+code-sandbox"
CODE_SANDBOX = {
    "codeSandbox": {
        "enabled": True,
        "image": "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64,
    }
}


# A stack file with a budget: its budget and e-mail channels are only rendered then.
BUDGET = "+budget"
BUDGET_CONFIG = {
    "billingAccount": "012345-6789AB-CDEF01",
    "monthlyAmount": 5000,
    "thresholds": [0.5, 1.0],
    "emails": ["ml-platform@example.com"],
}

# A stack file with alert e-mails: its channels and alert policies are only rendered then.
MONITORING = "+alerts"
MONITORING_CONFIG = {"alertEmails": ["oncall@example.com"], "lustreFullPercent": 80}


@cache
def _rendered(stack: str) -> Rendering:
    name = stack.removesuffix(SANDBOX).removesuffix(BUDGET).removesuffix(MONITORING)
    config, secret_keys = load_stack_file(name)
    config.setdefault("gcp:project", "example-project")
    if stack.endswith(BUDGET):
        config["rl-on-gke:budget"] = BUDGET_CONFIG
    if stack.endswith(MONITORING):
        config["rl-on-gke:monitoring"] = MONITORING_CONFIG
    if stack.endswith(SANDBOX):
        config["rl-on-gke:rewards"] = CODE_SANDBOX
        config["rl-on-gke:codeSandboxToken"] = (
            "sandbox-token-" + "0" * 24
        )  # required with the sandbox
        secret_keys = (*secret_keys, "rl-on-gke:codeSandboxToken")
    return render(config, stack=name, secret_keys=secret_keys)


def args_class(resource_type: str) -> type:
    """`gcp:container/nodePool:NodePool` -> pulumi_gcp.container.NodePoolArgs."""
    if resource_type == "pulumi:providers:gcp":
        return importlib.import_module("pulumi_gcp").ProviderArgs
    _, module_path, name = resource_type.split(":")
    module = importlib.import_module(f"pulumi_gcp.{module_path.split('/')[0]}")
    return getattr(module, f"{name}Args")


def _input_classes(hint: Any) -> tuple[list[type], bool]:
    """The input types a hint allows, and whether it allows a free-form mapping (labels, metadata)."""
    classes: list[type] = []
    free_mapping = False
    stack = [hint]
    while stack:
        current = stack.pop()
        if isinstance(current, type) and _types.is_input_type(current):
            classes.append(current)
            continue
        origin = typing.get_origin(current)
        if origin in (collections.abc.Mapping, dict, typing.Mapping):
            free_mapping = True
        stack.extend(typing.get_args(current))
    return classes, free_mapping


def unknown_keys(value: Any, cls: type, path: str) -> list[str]:
    if isinstance(value, SecretValue):
        value = value.value
    if not isinstance(value, dict):
        return []
    wire_names = set(_types.input_type_py_to_pulumi_names(cls).values())
    hints = _types.input_type_types(cls)  # keyed by wire name
    problems = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key not in wire_names:
            problems.append(where)
            continue
        problems += _check(item, hints.get(key), where)
    return problems


def _check(value: Any, hint: Any, path: str) -> list[str]:
    if isinstance(value, SecretValue):
        value = value.value
    classes, free_mapping = _input_classes(hint)
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _check(item, hint, f"{path}[{i}]")]
    if isinstance(value, dict) and classes:
        (cls,) = set(classes)  # the same Args class, reachable as T and as Awaitable[T]
        return unknown_keys(value, cls, path)
    if isinstance(value, dict) and not free_mapping:
        return [f"{path} (a mapping where the SDK declares {hint})"]
    return []


def _gcp_resources(stack: str):
    return [
        r
        for r in _rendered(stack).custom_resources()
        if r.type.startswith("gcp:") or r.type == "pulumi:providers:gcp"
    ]


@pytest.mark.plan
@pytest.mark.parametrize("stack", [*STACKS, f"dev{SANDBOX}", f"h200{BUDGET}", f"dev{MONITORING}"])
def test_every_gcp_input_key_is_declared_by_the_sdk(stack: str) -> None:
    problems = {
        f"{r.type} {r.name}": unknown
        for r in _gcp_resources(stack)
        if (unknown := unknown_keys(r.inputs, args_class(r.type), ""))
    }
    assert problems == {}


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_the_walk_reaches_the_day_two_keys(stack: str) -> None:
    # The check above must actually see the nested keys this stack relies on.
    rendered = {r.name: r.inputs for r in _gcp_resources(stack)}
    pool = next(v for k, v in rendered.items() if k.endswith("-gpu-pool"))
    cluster = next(v for k, v in rendered.items() if k.endswith("-gke-cluster"))
    assert pool["nodeConfig"]["ephemeralStorageLocalSsdConfig"]["localSsdCount"] == 32
    assert pool["upgradeSettings"]["maxSurge"] == 0
    assert cluster["maintenancePolicy"]["recurringWindow"]["recurrence"].startswith("FREQ=WEEKLY")


@pytest.mark.plan
def test_the_walk_reaches_the_sandbox_pool_keys() -> None:
    rendered = {r.name: r.inputs for r in _gcp_resources(f"dev{SANDBOX}")}
    pool = next(v for k, v in rendered.items() if k.endswith("-code-sandbox-pool"))
    assert pool["nodeConfig"]["sandboxConfig"] == {"type": "GVISOR"}
    assert pool["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


@pytest.mark.plan
def test_the_walk_accepts_the_flex_start_pool_keys() -> None:
    # The flex-start capacity mode's fields, checked against the SDK's NodePoolArgs.
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:gpu"] = {
        **config["rl-on-gke:gpu"],
        "provisioning": "flex-start",
        "maxRunDurationHours": 24,
    }
    rendering = render(config, stack="dev", secret_keys=secret_keys)
    (pool,) = [
        r for r in rendering.of_type("gcp:container/nodePool:NodePool") if r.inputs["name"] == "gpu"
    ]
    assert pool.inputs["nodeConfig"]["flexStart"] is True and "autoscaling" in pool.inputs
    assert unknown_keys(pool.inputs, args_class(pool.type), "") == []


@pytest.mark.plan
def test_the_walk_reaches_the_budget_keys() -> None:
    """The budget's nested inputs are walked, not skipped."""
    rendered = {r.type: r.inputs for r in _gcp_resources(f"h200{BUDGET}")}
    budget = rendered["gcp:billing/budget:Budget"]
    assert budget["amount"]["specifiedAmount"]["units"] == "5000"
    assert budget["allUpdatesRule"]["monitoringNotificationChannels"]
    assert rendered["gcp:monitoring/notificationChannel:NotificationChannel"]["type"] == "email"


@pytest.mark.plan
def test_the_walk_reaches_the_monitoring_keys() -> None:
    """The alert policies', log metric's and channels' nested inputs are walked."""
    rendered = [(r.type, r.name, r.inputs) for r in _gcp_resources(f"dev{MONITORING}")]
    policies = [i for t, _, i in rendered if t == "gcp:monitoring/alertPolicy:AlertPolicy"]
    assert len(policies) == 2
    for policy in policies:
        condition = policy["conditions"][0]
        if "conditionMatchedLog" in condition:  # the give-up policy (monitoring.py)
            assert condition["conditionMatchedLog"]["filter"]
            assert policy["alertStrategy"]["notificationRateLimit"]["period"]
        else:
            threshold = condition["conditionThreshold"]
            assert threshold["aggregations"][0]["perSeriesAligner"]
            assert threshold["trigger"]["count"]
        assert policy["documentation"]["mimeType"] and policy["alertStrategy"]["autoClose"]
    metrics = [i for t, _, i in rendered if t == "gcp:logging/metric:Metric"]
    assert len(metrics) == 3
    assert all(m["metricDescriptor"]["metricKind"] == "DELTA" for m in metrics)
    (dashboard,) = [i for t, _, i in rendered if t == "gcp:monitoring/dashboard:Dashboard"]
    assert dashboard["dashboardJson"].startswith("{")


@pytest.mark.plan
def test_the_walk_accepts_the_autoscaled_pool_keys() -> None:
    """A spot pool that scales on demand autoscales from zero."""
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "scaling": "on-demand"}
    rendering = render(config, stack="dev", secret_keys=secret_keys)
    (pool,) = [
        r for r in rendering.of_type("gcp:container/nodePool:NodePool") if r.inputs["name"] == "gpu"
    ]
    assert pool.inputs["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 2,
        "locationPolicy": "ANY",
    }
    assert unknown_keys(pool.inputs, args_class(pool.type), "") == []


def test_a_misspelt_nested_key_is_caught() -> None:
    from pulumi_gcp.container import NodePoolArgs

    inputs = {
        "nodeConfig": {"ephemeralStorageLocalSsdConfig": {"localSsdCnt": 32}},
        "upgradeSettings": {"maxSurge": 0},
    }
    assert unknown_keys(inputs, NodePoolArgs, "") == [
        "nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCnt"
    ]
    cluster = {
        "maintenancePolicy": {
            "maintenanceExclusions": [{"exclusionOptions": {"scope": "x", "until": 1}}]
        }
    }
    from pulumi_gcp.container import ClusterArgs

    assert unknown_keys(cluster, ClusterArgs, "") == [
        "maintenancePolicy.maintenanceExclusions[0].exclusionOptions.until"
    ]


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_the_walk_reaches_the_image_keys(stack: str) -> None:
    """The remote repositories' and the streaming pool's nested inputs are walked."""
    resources = _gcp_resources(stack)
    repos = [r for r in resources if r.type == "gcp:artifactregistry/repository:Repository"]
    assert repos and all(unknown_keys(r.inputs, args_class(r.type), "") == [] for r in repos)
    upstreams = [r.inputs["remoteRepositoryConfig"]["dockerRepository"] for r in repos]
    assert {"publicRepository": "DOCKER_HUB"} in upstreams
    assert any("uri" in u.get("customRepository", {}) for u in upstreams)
    pool = next(r.inputs for r in resources if r.name.endswith("-gpu-pool"))
    assert pool["nodeConfig"]["gcfsConfig"] == {"enabled": True}


@pytest.mark.plan
def test_the_walk_accepts_the_image_cache_disk_keys() -> None:
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "imageCacheDisk": "nemo-cache"}
    rendering = render(config, stack="dev", secret_keys=secret_keys)
    (pool,) = [
        r for r in rendering.of_type("gcp:container/nodePool:NodePool") if r.inputs["name"] == "gpu"
    ]
    assert pool.inputs["nodeConfig"]["secondaryBootDisks"][0]["mode"] == "CONTAINER_IMAGE_CACHE"
    assert unknown_keys(pool.inputs, args_class(pool.type), "") == []
