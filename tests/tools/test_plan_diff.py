"""The offline plan diff: exact changes between two renderings, and the nodeCount acceptance case."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.plan_diff import MISSING, diff_plans, flatten, to_markdown
from tools.render import ROOT

# Each test renders whole stacks under Pulumi's mock runtime (tools/plan, tools/plan_diff).
pytestmark = pytest.mark.plan


def _resource(urn: str, inputs: dict, **options) -> dict:
    return {
        "urn": urn,
        "type": "t:m:R",
        "name": urn.split("::")[-1],
        "custom": True,
        "inputs": inputs,
        "protect": options.get("protect", False),
        "retainOnDelete": False,
        "deletedWith": "",
    }


def test_flatten_names_every_leaf_by_path() -> None:
    assert flatten({"a": {"b": [1, {"c": 2}]}, "d": []}) == {"a.b[0]": 1, "a.b[1].c": 2, "d": []}


def test_diff_reports_added_removed_and_changed_paths_only() -> None:
    base = {"resources": [_resource("u::keep", {"x": 1, "y": {"z": 2}}), _resource("u::gone", {})]}
    head = {
        "resources": [
            _resource("u::keep", {"x": 1, "y": {"z": 3}, "w": True}),
            _resource("u::new", {}),
        ]
    }
    diff = diff_plans(base, head)
    assert [r["name"] for r in diff.added] == ["new"]
    assert [r["name"] for r in diff.removed] == ["gone"]
    assert [(c.name, c.changes) for c in diff.changed] == [
        ("keep", [("w", MISSING, True), ("y.z", 2, 3)])
    ]


def test_diff_sees_a_resource_losing_its_protection() -> None:
    diff = diff_plans(
        {"resources": [_resource("u::fs", {}, protect=True)]},
        {"resources": [_resource("u::fs", {}, protect=False)]},
    )
    assert diff.changed[0].changes == [("(protect)", True, False)]


def test_markdown_of_an_empty_diff_says_so_and_that_it_is_offline() -> None:
    text = to_markdown(diff_plans({"resources": []}, {"resources": []}), "dev", "main")
    assert "No resource changes." in text and "not a `pulumi preview`" in text


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A git repo holding this working tree's files, committed, so BASE is a real commit."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tmp_path / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    return tmp_path


def test_changing_gpu_node_count_changes_only_the_pool_size_and_ray_workers(
    repo_copy: Path,
) -> None:
    stack_file = repo_copy / "Pulumi.dev.yaml"
    stack_file.write_text(stack_file.read_text().replace("nodeCount: 2", "nodeCount: 3", 1))
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan_diff", "--stack", "dev", "--base", "HEAD"],
        cwd=repo_copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "0 to add, 2 to change, 0 to remove" in text
    changed_rows = [line for line in text.splitlines() if line.startswith("| `")]
    # dev scales on demand: the pool's autoscaling ceiling and the worker group's maximum, and
    # the head template's spec hash (every RayCluster change on it restarts the pods).
    hash_row = "spec.headGroupSpec.template.metadata.annotations.rl-on-gke/spec-hash"
    assert {row.split("`")[1] for row in changed_rows} == {
        "autoscaling.totalMaxNodeCount",
        "spec.workerGroupSpecs[0].maxReplicas",
        hash_row,
    }
    assert all("`2` | `3`" in row for row in changed_rows if hash_row not in row)
    assert "REPLACE" not in text and "(gcp:container/nodePool:NodePool): update in place" in text


def _diff_after(repo: Path, old: str, new: str) -> str:
    stack_file = repo / "Pulumi.dev.yaml"
    text = stack_file.read_text()
    assert old in text
    stack_file.write_text(text.replace(old, new, 1))
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan_diff", "--stack", "dev", "--base", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_new_gpu_machine_type_is_marked_replace_by_its_force_new_input(repo_copy: Path) -> None:
    text = _diff_after(repo_copy, "machineType: a4-highgpu-8g", "machineType: a3-ultragpu-8g")
    assert (
        "`rl-dev-gpu-pool` (gcp:container/nodePool:NodePool): **REPLACE** "
        "(force-new: `nodeConfig.guestAccelerators[].type`)"
    ) in text
    assert "**1 of the changes REPLACE a resource** (delete and create): `rl-dev-gpu-pool`." in text


def test_a_new_lustre_filesystem_name_is_marked_replace(repo_copy: Path) -> None:
    text = _diff_after(repo_copy, "filesystem: lustrefs", "filesystem: ckpt")
    assert (
        "`rl-dev-lustre-instance` (gcp:lustre/instance:Instance): **REPLACE** (force-new: `filesystem`)"
        in text
    )


def test_growing_lustre_updates_the_instance_and_the_pv_in_place(repo_copy: Path) -> None:
    text = _diff_after(repo_copy, "capacityGib: 9000", "capacityGib: 18000")
    assert "REPLACE" not in text
    assert "`rl-dev-lustre-instance` (gcp:lustre/instance:Instance): update in place" in text
    assert "`rl-dev-k8s-lustre-pv` (kubernetes:core/v1:PersistentVolume): update in place" in text
    assert '| `capacityGib` | `"9000"` | `"18000"` |' in text
    assert '| `spec.capacity.storage` | `"9000Gi"` | `"18000Gi"` |' in text


def test_parking_the_gpus_changes_only_the_pool_size_and_ray_worker_counts(repo_copy: Path) -> None:
    stack_file = repo_copy / "Pulumi.dev.yaml"
    stack_file.write_text(stack_file.read_text().replace("nodeCount: 2", "nodeCount: 0", 1))
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan_diff", "--stack", "dev", "--base", "HEAD"],
        cwd=repo_copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    # The cluster, Lustre, networks and every other object stay as they are. dev scales on
    # demand: its pool keeps autoscaling with a ceiling of 1 (GKE refuses a maximum of 0) and
    # the worker group may have no worker, so no GPU node is ever asked for.
    assert "0 to add, 2 to change, 0 to remove" in text
    changed_rows = [line for line in text.splitlines() if line.startswith("| `")]
    rows = {row.split("`")[1]: row.split("|")[2:4] for row in changed_rows}
    # On an autoscaled stack every RayCluster change restarts its pods (the head template's spec
    # hash, components/k8s/raycluster.py SPEC_HASH_ANNOTATION), and the plan shows it.
    spec_hash = rows.pop("spec.headGroupSpec.template.metadata.annotations.rl-on-gke/spec-hash")
    assert spec_hash[0] != spec_hash[1]
    assert rows == {
        "autoscaling.totalMaxNodeCount": [" `2` ", " `1` "],
        "spec.workerGroupSpecs[0].maxReplicas": [" `2` ", " `0` "],
    }


def test_unknown_base_ref_exits_2_with_one_line(repo_copy: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan_diff", "--stack", "dev", "--base", "no-such-ref"],
        cwd=repo_copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "no-such-ref" in result.stderr and "Traceback" not in result.stderr


def test_a_new_ray_namespace_replaces_namespace_raycluster_claim_and_the_volume(
    repo_copy: Path,
) -> None:
    """`ray.namespace: other` replaces the Namespace, the
    RayCluster and the PVC, and the plan says what happens to the PV: it is named from its claim,
    so it is replaced too (a fresh volume the new claim can bind, with the Lustre data untouched),
    instead of staying Released with the old claim's uid in its claimRef."""
    text = _diff_after(repo_copy, "framework: nemo-rl", "framework: nemo-rl\n    namespace: other")
    for name, typ in (
        ("rl-dev-k8s-identity-namespace", "kubernetes:core/v1:Namespace"),
        ("rl-dev-k8s-ray-raycluster", "kubernetes:ray.io/v1:RayCluster"),
        ("rl-dev-k8s-lustre-pvc", "kubernetes:core/v1:PersistentVolumeClaim"),
        ("rl-dev-k8s-lustre-pv", "kubernetes:core/v1:PersistentVolume"),
    ):
        assert f"`{name}` ({typ}): **REPLACE**" in text, name
    assert "reclaim policy Retain" in text and "the Lustre instance and its data stay" in text


def test_setting_an_image_cache_disk_is_marked_replace_of_the_gpu_pool(repo_copy: Path) -> None:
    text = _diff_after(
        repo_copy,
        "    provisioning: spot\n",
        "    provisioning: spot\n    imageCacheDisk: nemo-cache\n",
    )
    assert (
        "`rl-dev-gpu-pool` (gcp:container/nodePool:NodePool): **REPLACE** "
        "(force-new: `nodeConfig.secondaryBootDisks[]`, `nodeConfig.secondaryBootDisks[].diskImage`"
    ) in text
    assert "**1 of the changes REPLACE a resource** (delete and create): `rl-dev-gpu-pool`." in text


def test_turning_image_streaming_on_updates_a_pool_in_place() -> None:
    # A stack deployed before image streaming: the pool's gcfsConfig appears, nothing else.
    pool = {
        "urn": "urn:pulumi:dev::rl-on-gke::gcp:container/nodePool:NodePool::rl-dev-gpu-pool",
        "type": "gcp:container/nodePool:NodePool",
        "name": "rl-dev-gpu-pool",
        "custom": True,
        "inputs": {"name": "gpu", "nodeConfig": {"machineType": "a4-highgpu-8g"}},
    }
    streaming = {
        **pool,
        "inputs": {
            "name": "gpu",
            "nodeConfig": {"machineType": "a4-highgpu-8g", "gcfsConfig": {"enabled": True}},
        },
    }
    diff = diff_plans({"resources": [pool]}, {"resources": [streaming]})
    (change,) = diff.changed
    assert change.replace_by == [] and [p for p, _, _ in change.changes] == [
        "nodeConfig.gcfsConfig.enabled"
    ]
    text = to_markdown(diff, "dev", "main")
    assert "update in place" in text and "REPLACE" not in text
