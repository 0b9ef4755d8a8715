"""The CRD gate: objects of kinds GKE installs late wait for a Job that waits for their CRDs."""

from __future__ import annotations

import pytest

from components.k8s.crd_gate import (
    DEADLINE_SECONDS,
    GKE_INSTALLED_CRDS,
    KUBECTL_IMAGE,
    cluster_role_manifest,
    gate_command,
    job_manifest,
)
from tests.components.k8s.conftest import make_config
from tests.components.k8s.fakes import SYSTEM_POOL, render_layer
from tests.components.k8s.manifests import _crds_naming, require_schemas_dir, validate_core

JOB = "kubernetes:batch/v1:Job"
# Core groups the API server always serves; every other group is a CRD.
_BUILT_IN = {"core", "apps", "batch", "rbac.authorization.k8s.io", "scheduling.k8s.io"}


@pytest.fixture(scope="module")
def rendering():
    return render_layer(make_config()).rendering


def _group_and_kind(resource_type: str) -> tuple[str, str]:
    # "kubernetes:networking.gke.io/v1:Network" -> ("networking.gke.io", "Network")
    _, group_version, kind = resource_type.split(":")
    return group_version.rsplit("/", 1)[0], kind


def _crd_name(group: str, kind: str) -> str:
    """<plural>.<group>, from the vendored CRD when there is one (PodMonitoring's is not)."""
    for crd in _crds_naming(require_schemas_dir(), kind):
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind:
            return crd["metadata"]["name"]
    return f"{kind.lower()}s.{group}"


def test_every_custom_kind_the_layer_creates_is_gated_and_waits_for_the_job(rendering) -> None:
    job = rendering.one(JOB)
    custom = [
        r
        for r in rendering.custom_resources()
        if r.type.startswith("kubernetes:") and _group_and_kind(r.type)[0] not in _BUILT_IN
    ]
    assert {r.type.rsplit(":", 1)[1] for r in custom} == {
        "GKENetworkParamSet",
        "Network",
        "PodMonitoring",
        "RayCluster",
    }
    for resource in custom:
        assert _crd_name(*_group_and_kind(resource.type)) in GKE_INSTALLED_CRDS, resource.type
        assert job.urn in resource.dependencies, resource.name


def test_job_runs_the_gate_script_over_every_crd_on_the_system_pool(rendering) -> None:
    pod = rendering.one(JOB).inputs["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    (container,) = pod["containers"]
    assert container["command"] == gate_command(GKE_INSTALLED_CRDS)
    assert container["command"][:2] == ["/bin/bash", "-c"] and container["command"][-4:] == list(
        GKE_INSTALLED_CRDS
    )
    # Through the stack's registry.k8s.io remote repository, by digest (components/registry.py).
    repo, digest = container["image"].split("@")
    assert repo == "us-east1-docker.pkg.dev/example-project/rl-test-k8s/kubectl"
    assert digest.startswith("sha256:") and KUBECTL_IMAGE.startswith("registry.k8s.io/kubectl:")
    assert {e["name"]: e["value"] for e in container["env"]} == {
        "GATE_DEADLINE_SECONDS": str(DEADLINE_SECONDS),
        "GATE_POLL_SECONDS": "5",
    }
    assert pod["nodeSelector"] == {"cloud.google.com/gke-nodepool": SYSTEM_POOL}
    assert pod["serviceAccountName"] == "rl-test-crd-gate"


def test_the_job_fails_once_and_a_failed_job_is_replaced_not_awaited_on_the_next_up() -> None:
    # With OnFailure / backoffLimit 3 a rerun awaited the already-failed Job.
    job = job_manifest("g", "ns", "g", "system", GKE_INSTALLED_CRDS)
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


def test_pulumi_awaits_the_job_longer_than_the_job_and_the_job_longer_than_the_script() -> None:
    job = job_manifest("g", "ns", "g", "system", GKE_INSTALLED_CRDS)
    timeout = int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    assert timeout > job["spec"]["activeDeadlineSeconds"] > DEADLINE_SECONDS
    validate_core(job)


def test_the_job_may_only_read_the_crds_it_waits_for() -> None:
    role = cluster_role_manifest("g", GKE_INSTALLED_CRDS)
    (rule,) = role["rules"]
    assert rule["verbs"] == ["get"]
    assert rule["resourceNames"] == list(GKE_INSTALLED_CRDS)
    validate_core(role)


def test_job_runs_only_after_its_service_account_can_read_the_crds(rendering) -> None:
    job = rendering.one(JOB)
    binding = rendering.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert binding.urn in job.dependencies
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "rl-test-crd-gate", "namespace": "rl-train"}
    ]
