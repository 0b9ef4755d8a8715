"""The offline plan CLI: says it is offline, shows the tree and counts, fails cleanly on bad stacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tools.render import ROOT

# Each test renders whole stacks under Pulumi's mock runtime (tools/plan, tools/plan_diff).
pytestmark = pytest.mark.plan


def _plan(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "tools.plan", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_plan_says_it_is_offline_and_lists_resources_with_counts() -> None:
    result = _plan("--stack", "dev")
    assert result.returncode == 0, result.stderr
    words = " ".join(result.stdout.split())  # lines wrap at the reader's width
    assert "OFFLINE PLAN" in words and "not a cloud" in words
    assert "rl-dev-rdma-net" in result.stdout
    assert "gcp:lustre/instance:Instance" in result.stdout
    assert 'kubeconfig: "[secret]"' in result.stdout
    assert "gcp:project is not set" in words


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


def test_plans_of_both_stacks_show_the_day_two_settings() -> None:
    import re

    for stack in ("dev", "h200"):
        # Wide enough that no value is folded mid-word; only the tree's own line breaks remain.
        result = _plan("--stack", stack, columns=2000)
        assert result.returncode == 0, result.stderr
        text = re.sub(r"\s*\n[│├└─ ]*", " ", result.stdout)  # undo the tree's line wrapping
        assert 'upgradeSettings={"maxSurge":0,"strategy":"SURGE","maxUnavailable":1}' in text, stack
        assert "maintenancePolicy=" in text and "FREQ=WEEKLY;BYDAY=SA,SU" in text, stack
        assert 'nodeConfig.ephemeralStorageLocalSsdConfig={"localSsdCount":32}' in text, stack
        assert "/tmp/ray" in text and 'ephemeral-storage="50Gi"' in text, stack
        # Workers of a pool that scales from 0 (dev: spot) request none: GKE's autoscaler would
        # not scale the Local SSD pool up for them (raycluster.py worker_scratch_request).
        assert ('ephemeral-storage="1000Gi"' in text) is (stack == "h200"), stack
        assert 'service="container.googleapis.com", disableOnDestroy=false' in text, stack
        assert (
            f'kind="Network", metadata.name="rdma-0", waitsFor=["rl-{stack}-k8s-crd-gate-job"]'
            in text
        ), stack
        # The CRD gate fails once, at its one deadline.
        assert "spec.backoffLimit=0" in text and '"name":"GATE_DEADLINE_SECONDS"' in text, stack
        assert 'upgradeSettings={"maxSurge":1,"strategy":"SURGE","maxUnavailable":0}' in text, stack


def test_plan_json_records_each_resources_dependencies() -> None:
    plan = json.loads(_plan("--stack", "dev", "--json").stdout)
    by_name = {r["name"]: r for r in plan["resources"]}
    job = by_name["rl-dev-k8s-crd-gate-job"]
    assert job["urn"] in by_name["rl-dev-k8s-ray-raycluster"]["dependencies"]


def test_plan_fits_the_readers_80_columns_and_keeps_wrapped_settings_under_their_resource() -> None:
    """The plan was laid out at a fixed 160 columns, so an 80-column
    terminal broke every long line through the tree's guides."""
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    # The firewall's settings wrap; each wrapped line keeps the settings' indent in the tree.
    at = next(
        i for i, line in enumerate(lines) if "rl-dev-gvnic-internal gcp:compute/firewall" in line
    )
    settings = lines[at + 1 : at + 4]
    assert all(line.startswith("│   │     ") for line in settings), settings
    assert "allows=" in "".join(settings)
