"""The CRD gate: objects of kinds GKE installs late wait for a Job that waits for their CRDs."""

from __future__ import annotations

import pytest

from components.k8s.crd_gate import (
    GKE_INSTALLED_CRDS, KUBECTL_IMAGE, cluster_role_manifest, job_manifest,
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
        r for r in rendering.custom_resources()
        if r.type.startswith("kubernetes:") and _group_and_kind(r.type)[0] not in _BUILT_IN
    ]
    assert {r.type.rsplit(":", 1)[1] for r in custom} == {
        "GKENetworkParamSet", "Network", "PodMonitoring", "RayCluster"}
    for resource in custom:
        assert _crd_name(*_group_and_kind(resource.type)) in GKE_INSTALLED_CRDS, resource.type
        assert job.urn in resource.dependencies, resource.name


def test_job_waits_for_creation_then_establishment_of_each_crd_on_the_system_pool(rendering) -> None:
    spec = rendering.one(JOB).inputs["spec"]
    pod = spec["template"]["spec"]
    (create,) = pod["initContainers"]
    (established,) = pod["containers"]
    crds = [f"crd/{name}" for name in GKE_INSTALLED_CRDS]
    assert create["args"][:2] == ["wait", "--for=create"] and create["args"][-len(crds):] == crds
    assert established["args"][:2] == ["wait", "--for=condition=Established"]
    assert established["args"][-len(crds):] == crds
    assert {create["image"], established["image"]} == {KUBECTL_IMAGE}
    assert pod["nodeSelector"] == {"cloud.google.com/gke-nodepool": SYSTEM_POOL}
    assert pod["serviceAccountName"] == "rl-test-crd-gate"


def test_pulumi_awaits_the_job_longer_than_the_job_itself_may_run() -> None:
    job = job_manifest("g", "ns", "g", "system", GKE_INSTALLED_CRDS)
    timeout = int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    assert timeout >= job["spec"]["activeDeadlineSeconds"]
    validate_core(job)


def test_the_job_may_only_read_the_crds_it_waits_for() -> None:
    role = cluster_role_manifest("g", GKE_INSTALLED_CRDS)
    (rule,) = role["rules"]
    assert rule["verbs"] == ["get", "list", "watch"]
    assert rule["resourceNames"] == list(GKE_INSTALLED_CRDS)
    validate_core(role)


def test_job_runs_only_after_its_service_account_can_read_the_crds(rendering) -> None:
    job = rendering.one(JOB)
    binding = rendering.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert binding.urn in job.dependencies
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "rl-test-crd-gate", "namespace": "rl-train"}]
