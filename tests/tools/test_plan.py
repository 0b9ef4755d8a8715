"""The offline plan CLI: says it is offline, shows the tree and counts, fails cleanly on bad stacks."""

from __future__ import annotations

import json
import subprocess
import sys

from tools.render import ROOT


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_plan_says_it_is_offline_and_lists_resources_with_counts() -> None:
    result = _plan("--stack", "dev")
    assert result.returncode == 0, result.stderr
    assert "OFFLINE PLAN" in result.stdout and "not a cloud" in result.stdout
    assert "rl-dev-rdma-net" in result.stdout
    assert "gcp:lustre/instance:Instance" in result.stdout
    assert 'kubeconfig: "[secret]"' in result.stdout
    assert "gcp:project is not set" in result.stdout


def test_plan_json_counts_match_the_rendered_resources() -> None:
    result = _plan("--stack", "h200", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["offline"] is True and plan["stack"] == "h200"
    custom = [r for r in plan["resources"] if r["custom"]]
    assert sum(plan["counts"].values()) == len(custom)
    assert plan["counts"]["gcp:compute/subnetwork:Subnetwork"] == 10
    assert plan["outputs"]["kubeconfig"] == "[secret]"


def test_unknown_stack_exits_2_naming_the_stacks_there_are() -> None:
    result = _plan("--stack", "nope")
    assert result.returncode == 2
    assert "Pulumi.nope.yaml" in result.stderr and "dev, h200" in result.stderr
    assert "Traceback" not in result.stderr
