"""The program enables its Google APIs itself, never disables them, and no GCP resource races them."""

from __future__ import annotations

from functools import cache

import pytest

from components.gcp.apis import REQUIRED_APIS
from tools.render import Rendering, load_stack_file, render

SERVICE = "gcp:projects/service:Service"
GCP_PROVIDER = "pulumi:providers:gcp"


@cache
def _dev() -> Rendering:
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    return render(config, stack="dev", secret_keys=secret_keys)


@pytest.mark.plan
def test_every_required_api_is_enabled_and_survives_destroy() -> None:
    services = _dev().of_type(SERVICE)
    assert sorted(s.inputs["service"] for s in services) == sorted(REQUIRED_APIS)
    for service in services:
        assert service.inputs["project"] == "example-project"
        assert service.inputs["disableOnDestroy"] is False
        assert service.inputs["disableDependentServices"] is False


@pytest.mark.plan
def test_the_apis_cover_every_gcp_module_the_stack_uses() -> None:
    # gcp:<module>/... -> the API that serves it.
    served_by = {
        "compute": "compute.googleapis.com",
        "container": "container.googleapis.com",
        "lustre": "lustre.googleapis.com",
        "servicenetworking": "servicenetworking.googleapis.com",
        "serviceaccount": "iam.googleapis.com",
        "projects": "cloudresourcemanager.googleapis.com",
        # The stack dashboard and its log-based metric (components/gcp/monitoring.py).
        "monitoring": "monitoring.googleapis.com",
        "logging": "logging.googleapis.com",
        # The remote repositories every image is pulled through (components/gcp/registry.py).
        "artifactregistry": "artifactregistry.googleapis.com",
    }
    modules = {
        r.type.split(":")[1].split("/")[0]
        for r in _dev().custom_resources()
        if r.type.startswith("gcp:")
    }
    assert modules <= set(served_by), modules - set(served_by)
    assert {served_by[m] for m in modules} <= set(REQUIRED_APIS)


def test_the_apis_include_the_ones_behind_the_resources_the_program_does_not_name() -> None:
    # Enabling an API goes through Service Usage and needs Cloud Resource Manager on (tpg #6101);
    # Workload Identity tokens come from the IAM Service Account Credentials API.
    assert {
        "serviceusage.googleapis.com",
        "cloudresourcemanager.googleapis.com",
        "iamcredentials.googleapis.com",
    } <= set(REQUIRED_APIS)


@pytest.mark.plan
def test_every_other_gcp_resource_goes_through_the_provider_that_waits_for_the_apis() -> None:
    rendering = _dev()
    (provider,) = rendering.of_type(GCP_PROVIDER)
    assert {s.urn for s in rendering.of_type(SERVICE)} <= set(provider.dependencies)
    others = [
        r for r in rendering.custom_resources() if r.type.startswith("gcp:") and r.type != SERVICE
    ]
    assert len(others) > 20
    for resource in others:
        assert resource.provider.startswith(provider.urn + "::"), resource.name


@pytest.mark.plan
def test_a_stack_whose_pools_stream_images_enables_the_container_file_system_api() -> None:
    # GKE "Use Image streaming", Requirements: the Container File System API must be enabled.
    pools = _dev().of_type("gcp:container/nodePool:NodePool")
    streaming = [p for p in pools if p.inputs["nodeConfig"].get("gcfsConfig", {}).get("enabled")]
    assert streaming
    services = {s.inputs["service"] for s in _dev().of_type(SERVICE)}
    assert "containerfilesystem.googleapis.com" in services
