"""The PR preview gate on `pulumi preview --json` documents (Pulumi's PreviewDigest format).

The documents in previews/ are written in the shape pulumi/pulumi pkg/display/json.go serialises
(`steps[]` of `op`, `urn`, `provider`, `oldState`/`newState` with `type`, `replaceReasons`,
`detailedDiff`; `changeSummary`), with the ops a replacement emits in order
(create-replacement, replace, delete-replaced). They are not captured from a real preview: no
Pulumi CLI or cloud account is available here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.preview_gate import ALLOW_LABEL, PreviewFormatError, blocked_steps, step_type, verdict
from tools.render import ROOT

PREVIEWS = Path(__file__).parent / "previews"


def _load(name: str) -> dict:
    return json.loads((PREVIEWS / name).read_text())


def _gate(name: str, labels: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.preview_gate", str(PREVIEWS / name), "--labels", labels],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_gpu_pool_replacement_fails_the_gate_without_the_label() -> None:
    result = _gate("replace-gpu-pool.json", labels="enhancement")
    assert result.returncode == 1
    assert "would replace or delete 1 resource(s)" in result.stderr
    assert (
        "create-replacement/replace/delete-replaced: a node pool, rl-dev-gpu-pool "
        "(gcp:container/nodePool:NodePool)"
    ) in result.stderr
    assert f"add the `{ALLOW_LABEL}` label" in result.stderr


def test_the_same_replacement_passes_with_the_label_and_still_lists_it() -> None:
    result = _gate("replace-gpu-pool.json", labels=f"enhancement,{ALLOW_LABEL}")
    assert result.returncode == 0, result.stderr
    assert (
        f"allowed by the `{ALLOW_LABEL}` label" in result.stdout
        and "rl-dev-gpu-pool" in result.stdout
    )


def test_an_in_place_node_count_update_passes() -> None:
    result = _gate("update-gpu-node-count.json")
    assert result.returncode == 0 and "no replacement or deletion" in result.stdout


def test_deleting_lustre_is_blocked_but_replacing_a_kubernetes_object_is_not_guarded() -> None:
    blocked = blocked_steps(_load("delete-lustre.json"))
    assert [(b.op, b.type, b.name) for b in blocked] == [
        ("delete", "gcp:lustre/instance:Instance", "rl-dev-lustre-instance")
    ]


def test_each_replacement_step_of_one_resource_is_reported_once_per_op() -> None:
    ops = [b.op for b in blocked_steps(_load("replace-gpu-pool.json"))]
    assert ops == ["create-replacement", "replace", "delete-replaced"]


def test_the_type_comes_from_the_urn_when_the_step_has_no_state() -> None:
    urn = "urn:pulumi:dev::rl-on-gke::rl-on-gke:gcp:GkeCluster$gcp:container/cluster:Cluster::rl-dev-gke-cluster"
    assert step_type({"op": "replace", "urn": urn}) == "gcp:container/cluster:Cluster"
    passes, message = verdict({"steps": [{"op": "replace", "urn": urn}]}, labels=[])
    assert not passes and "the GKE cluster, rl-dev-gke-cluster" in message


@pytest.mark.parametrize("document", [[], {"steps": "no"}, {"steps": [{"urn": "x"}]}])
def test_a_document_that_is_not_a_preview_is_refused(document) -> None:
    with pytest.raises(PreviewFormatError):
        blocked_steps(document)


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "preview.json"
    bad.write_text("error: could not load plugin")
    result = subprocess.run(
        [sys.executable, "-m", "tools.preview_gate", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
