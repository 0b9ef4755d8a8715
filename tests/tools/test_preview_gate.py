"""The PR preview gate on `pulumi preview --json` documents (Pulumi's PreviewDigest format).

The documents in previews/ are written in the shape pulumi/pulumi pkg/backend/display/json.go
serialises (`steps[]` of `op`, `urn`, `provider`, `oldState`/`newState` with `type`,
`replaceReasons`, `detailedDiff`; `changeSummary`). `pulumi preview --json` shows a replacement as
ONE `replace` step (display.go `shouldShow` hides create-replacement / delete-replaced unless
`--show-replacement-steps`); `replace-gpu-pool-replacement-steps.json` is the same preview with that
flag. They are not captured from a real preview: no Pulumi CLI or cloud account is available here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.preview_gate import (
    ALLOW_LABEL,
    RESTART_LABEL,
    PreviewFormatError,
    blocked_steps,
    ray_restarts,
    step_type,
    verdict,
)
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
        "replace: a node pool, rl-dev-gpu-pool (gcp:container/nodePool:NodePool)"
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


def test_deleting_lustre_and_replacing_its_persistent_volume_are_both_blocked() -> None:
    """The PV is guarded too (it was let through before)."""
    blocked = blocked_steps(_load("delete-lustre.json"))
    assert [(b.op, b.type, b.name) for b in blocked] == [
        ("delete", "gcp:lustre/instance:Instance", "rl-dev-lustre-instance"),
        ("replace", "kubernetes:core/v1:PersistentVolume", "rl-dev-k8s-lustre-pv"),
    ]


def test_a_replacement_is_one_replace_step_in_the_default_json_format() -> None:
    """The fixture described a replacement as three steps; `pulumi preview
    --json` without `--show-replacement-steps` emits one `replace` step."""
    document = _load("replace-gpu-pool.json")
    assert [s["op"] for s in document["steps"]] == ["same", "replace"]
    assert [(b.op, b.name) for b in blocked_steps(document)] == [("replace", "rl-dev-gpu-pool")]


def test_with_replacement_steps_the_three_ops_report_as_one_replacement() -> None:
    """The gate reads both formats and reports the same verdict for each."""
    detailed = _load("replace-gpu-pool-replacement-steps.json")
    assert [s["op"] for s in detailed["steps"]] == [
        "same",
        "create-replacement",
        "replace",
        "delete-replaced",
    ]
    assert blocked_steps(detailed) == blocked_steps(_load("replace-gpu-pool.json"))
    assert verdict(detailed, []) == verdict(_load("replace-gpu-pool.json"), [])


_K8S = "urn:pulumi:dev::rl-on-gke::rl-on-gke:k8s:TrainingLayer$"


@pytest.mark.parametrize(
    ("urn", "what"),
    [
        (
            _K8S + "rl-on-gke:k8s:TrainingRayCluster$kubernetes:ray.io/v1:RayCluster::rl-dev-ray",
            "the RayCluster",
        ),
        (_K8S + "kubernetes:core/v1:Namespace::rl-dev-namespace", "a namespace"),
        (
            _K8S
            + "rl-on-gke:k8s:LustreVolume$kubernetes:core/v1:PersistentVolume::rl-dev-lustre-pv",
            "the Lustre PersistentVolume",
        ),
        (
            _K8S
            + "rl-on-gke:k8s:LustreVolume$kubernetes:core/v1:PersistentVolumeClaim::rl-dev-lustre-pvc",
            "the Lustre claim",
        ),
        (
            "urn:pulumi:dev::rl-on-gke::rl-on-gke:gcp:PrivateServiceAccess$"
            "gcp:servicenetworking/connection:Connection::rl-dev-psa-connection",
            "the Private Service Access peering",
        ),
        (
            "urn:pulumi:dev::rl-on-gke::rl-on-gke:gcp:PrivateServiceAccess$"
            "gcp:compute/globalAddress:GlobalAddress::rl-dev-psa-range",
            "the Private Service Access range",
        ),
    ],
)
def test_what_running_jobs_live_in_is_guarded(urn: str, what: str) -> None:
    """GUARDED_TYPES omitted the RayCluster, the Namespace, the PV and PVC, the
    service networking connection and the PSA address, so a `ray.namespace` change (every run
    dies) passed the gate."""
    for op in ("replace", "delete"):
        passes, message = verdict({"steps": [{"op": op, "urn": urn}]}, labels=[])
        assert not passes and f"{op}: {what}" in message
    assert verdict({"steps": [{"op": "replace", "urn": urn}]}, labels=[ALLOW_LABEL])[0]


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


# How the docs name each guarded type: a type added to GUARDED_TYPES fails here until docs/deploy.md and
# the preview workflow's header say it is guarded (the header listed only the first four for a while).
GUARDED_IN_DOCS = {
    "gcp:container/cluster:Cluster": "cluster",
    "gcp:container/nodePool:NodePool": "node pool",
    "gcp:lustre/instance:Instance": "Lustre instance",
    "gcp:compute/network:Network": "network",
    "gcp:compute/subnetwork:Subnetwork": "subnetwork",
    "gcp:servicenetworking/connection:Connection": "peering",
    "gcp:compute/globalAddress:GlobalAddress": "Private Service Access range",
    "kubernetes:ray.io/v1:RayCluster": "RayCluster",
    "kubernetes:core/v1:Namespace": "namespace",
    "kubernetes:core/v1:PersistentVolume": "PV/PVC",
    "kubernetes:core/v1:PersistentVolumeClaim": "PV/PVC",
}


def test_the_deploy_guide_and_the_preview_workflow_name_every_guarded_type() -> None:
    from tools.preview_gate import GUARDED_TYPES

    assert set(GUARDED_IN_DOCS) == set(GUARDED_TYPES)
    header = "".join(
        line.lstrip("# ")
        for line in (ROOT / ".github" / "workflows" / "preview.yml").read_text().splitlines(True)
        if line.startswith("#")
    ).replace("\n", " ")
    readme = (ROOT / "docs" / "deploy.md").read_text()
    gate = readme[readme.index("`tools/preview_gate.py`") :].split("\n\n")[0].replace("\n", " ")
    for typ, words in GUARDED_IN_DOCS.items():
        assert words in header, f"preview.yml's header does not say {typ} ({words}) is guarded"
        assert words in gate, f"deploy.md's gate paragraph does not say {typ} ({words}) is guarded"


RAY_URN = (
    "urn:pulumi:dev::rl-on-gke::rl-on-gke:k8s:KubernetesLayer$rl-on-gke:k8s:TrainingRayCluster$"
    "kubernetes:ray.io/v1:RayCluster::rl-dev-k8s-ray-raycluster"
)


def _ray_update(*paths: str) -> dict:
    state = {"type": "kubernetes:ray.io/v1:RayCluster"}
    step = {"op": "update", "urn": RAY_URN, "oldState": state, "newState": state}
    if paths:
        step["detailedDiff"] = {p: {"kind": "update", "inputDiff": True} for p in paths}
    return {"steps": [step], "changeSummary": {"update": 1}}


@pytest.mark.parametrize(
    "paths",
    [
        ("spec.headGroupSpec.template.spec.containers[0].image",),
        ("spec.headGroupSpec.template.metadata.annotations.rl-on-gke/spec-hash",),
        ("spec.autoscalerOptions.idleTimeoutSeconds", "spec.workerGroupSpecs[0].maxReplicas"),
        ("spec.enableInTreeAutoscaling",),
        (),  # no detailed diff: assume the worst
    ],
)
def test_a_raycluster_update_that_recreates_its_pods_needs_the_restart_label(paths) -> None:
    """KubeRay's Recreate strategy turns these in-place updates into a restart of
    the head and every worker, which kills running jobs; the gate says so and asks."""
    document = _ray_update(*paths)
    passes, message = verdict(document, [ALLOW_LABEL])
    assert passes is False
    assert "restarts the Ray cluster rl-dev-k8s-ray-raycluster" in message
    assert f"add the `{RESTART_LABEL}` label" in message and "rl-jobs list" in message
    passes, message = verdict(document, [RESTART_LABEL])
    assert passes is True and f"allowed by the `{RESTART_LABEL}` label" in message


@pytest.mark.parametrize(
    "paths",
    [
        ("spec.workerGroupSpecs[0].replicas", "spec.workerGroupSpecs[0].minReplicas"),
        ("spec.workerGroupSpecs[0].maxReplicas",),
        ("spec.upgradeStrategy", 'metadata.annotations["pulumi.com/patchForce"]'),
        ("spec.workerGroupSpecs[0].template.spec.tolerations[1].key",),
    ],
)
def test_a_raycluster_update_kuberays_hash_leaves_out_passes(paths) -> None:
    assert verdict(_ray_update(*paths), []) == (True, verdict({"steps": []}, [])[1])
    assert ray_restarts(_ray_update(*paths)) == []
