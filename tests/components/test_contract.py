"""The contract: mount-point parsing, the outputs model's export/parse round trip, one home per literal."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from components.contract import (
    get_credentials_command,
    parse_mount_point,
    port_forward_command,
)
from components.stack_outputs import StackOutputs, export_stack_outputs

ROOT = Path(__file__).resolve().parents[2]
# Where the program's own code lives (tests, the venv and bench are not the program).
PROGRAM_DIRS = ("components", "jobs", "policy", "tools")


def test_mount_point_splits_into_ip_and_bare_filesystem_name() -> None:
    mount = parse_mount_point("10.16.0.2@tcp:/lustrefs")
    assert (mount.ip, mount.filesystem) == ("10.16.0.2", "lustrefs")


@pytest.mark.parametrize(
    "bad",
    ["10.16.0.2:/lustrefs", "10.16.0.2@tcp:lustrefs", "host@tcp:/fs", "10.0.0.1@tcp:/toolongname"],
)
def test_malformed_mount_points_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="IP@tcp:/FILESYSTEM|IPv4 address"):
        parse_mount_point(bad)


def test_export_names_every_output_in_camel_case_once() -> None:
    exported: list[tuple[str, object]] = []
    values = {field: f"v-{field}" for field in StackOutputs.model_fields}
    export_stack_outputs(lambda name, value: exported.append((name, value)), **values)
    names = [name for name, _ in exported]
    assert len(names) == len(set(names)) == len(StackOutputs.model_fields)
    assert ("gpuNodeCount", "v-gpu_node_count") in exported
    assert ("rayDashboardPort", "v-ray_dashboard_port") in exported
    assert all("_" not in name for name in names)


def test_export_refuses_a_missing_or_unknown_output_before_exporting_any() -> None:
    exported: list[str] = []
    values = {field: 1 for field in StackOutputs.model_fields}
    del values["ray_framework"]
    with pytest.raises(TypeError, match="ray_framework"):
        export_stack_outputs(lambda name, _v: exported.append(name), **values, ray_framewrk="x")
    assert exported == []


def test_commands_a_person_runs_to_reach_the_cluster() -> None:
    assert get_credentials_command("c", "us-east1", "p", dns_endpoint=True) == (
        "gcloud container clusters get-credentials c --location us-east1 --project p --dns-endpoint"
    )
    assert not get_credentials_command("c", "l", "p", dns_endpoint=False).endswith("--dns-endpoint")
    assert (
        port_forward_command("rl", "svc-1", 8265)
        == "kubectl port-forward -n rl svc/svc-1 8265:8265"
    )


@cache
def _program_strings() -> dict[str, tuple[str, ...]]:
    """Each program module's string constants (the top-level files: their whole text), parsed
    once for every literal checked."""
    strings: dict[str, tuple[str, ...]] = {}
    for directory in PROGRAM_DIRS:
        for path in (ROOT / directory).rglob("*.py"):
            tree = ast.parse(path.read_text(), filename=str(path))
            strings[str(path.relative_to(ROOT))] = tuple(
                node.value
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
            )
    for path in ROOT.glob("*.py"):
        strings[path.name] = (path.read_text(),)
    return strings


def _modules_with_literal(literal: str) -> set[str]:
    """Modules holding the literal as a token of a string (`/lustre` in `components/gcp/lustre.py`
    is a file name, not the mount path)."""
    token = re.compile(rf"(?<![\w/]){re.escape(literal)}(?![\w])")
    return {
        module
        for module, strings in _program_strings().items()
        if any(token.search(value) for value in strings)
    }


@pytest.mark.parametrize(
    "literal", ["/lustre", "HF_HOME", "rl-on-gke-protect", "/home/kubernetes/bin/gib"]
)
def test_each_shared_literal_lives_in_the_contract_only(literal: str) -> None:
    assert _modules_with_literal(literal) == {"components/contract.py"}


def test_the_deploy_guide_lists_every_stack_output() -> None:
    readme = (ROOT / "docs" / "deploy.md").read_text()
    missing = [
        StackOutputs.output_name(f)
        for f in StackOutputs.model_fields
        if f"`{StackOutputs.output_name(f)}`" not in readme
    ]
    assert missing == []
