"""The stack's Artifact Registry remote repositories: one per upstream its images need, in the cluster's region."""

from __future__ import annotations

from functools import cache

import pytest

from tools.render import Rendering, load_stack_file, render

pytestmark = pytest.mark.plan

REPOSITORY = "gcp:artifactregistry/repository:Repository"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"


@cache
def _rendered(stack: str) -> Rendering:
    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", "example-project")
    return render(config, stack=stack, secret_keys=secret_keys)


@pytest.mark.parametrize(("stack", "region"), [("dev", "us-east1"), ("h200", "us-central1")])
def test_the_remote_repositories_mirror_the_upstreams_in_the_clusters_region(
    stack: str, region: str
) -> None:
    repos = {r.inputs["repositoryId"]: r.inputs for r in _rendered(stack).of_type(REPOSITORY)}
    upstreams = {
        repo: inputs["remoteRepositoryConfig"]["dockerRepository"] for repo, inputs in repos.items()
    }
    expected = {
        f"rl-{stack}-docker-hub": {"publicRepository": "DOCKER_HUB"},
        f"rl-{stack}-gke": {"customRepository": {"uri": "https://gke.gcr.io"}},
        f"rl-{stack}-k8s": {"customRepository": {"uri": "https://registry.k8s.io"}},
    }
    if stack == "dev":  # NeMo RL comes from NGC; veRL (h200) from Docker Hub
        expected[f"rl-{stack}-nvcr"] = {"customRepository": {"uri": "https://nvcr.io"}}
    assert upstreams == expected
    for inputs in repos.values():
        assert inputs["location"] == region and inputs["project"] == "example-project"
        assert inputs["format"] == "DOCKER" and inputs["mode"] == "REMOTE_REPOSITORY"


def test_the_node_service_account_may_read_the_repositories_and_stream_images() -> None:
    roles = {
        r.inputs["role"] for r in _rendered("dev").of_type(IAM_MEMBER) if "-gke-nodes-" in r.name
    }
    assert {"roles/artifactregistry.reader", "roles/serviceusage.serviceUsageConsumer"} <= roles
