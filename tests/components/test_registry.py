"""Images by digest through the stack's remote repositories: the catalogue's pins and the rules on them (pure)."""

from __future__ import annotations

import pytest

from components.catalogue import FRAMEWORKS, IMAGES
from components.registry import (
    DIGEST,
    StackImages,
    digest_problems,
    disk_image_path,
    disk_image_problem,
    own_image_problem,
    repository_problem,
    resolved_digests,
    unstreamable,
    used_images,
)

DIGEST_A = "sha256:" + "a" * 64


def test_every_catalogue_image_keeps_its_tag_and_its_digest_side_by_side() -> None:
    for name, pin in IMAGES.items():
        assert pin.name == name and pin.tag and pin.upstream_ref.endswith(f":{pin.tag}")
        # A digest is either one read from a named source, or absent and said to be unverified.
        if pin.digest is None:
            assert pin.source.startswith("UNVERIFIED"), name
            assert f"images.{name}.digest" in pin.source
        else:
            assert DIGEST.match(pin.digest), name


def test_the_framework_images_are_the_catalogue_pins() -> None:
    for name, spec in FRAMEWORKS.items():
        assert spec.image == IMAGES[name].upstream_ref
        assert spec.image_digest == IMAGES[name].digest


def test_an_image_with_a_tag_alone_is_refused_naming_its_key() -> None:
    (problem,) = digest_problems(("nemo-rl",), {})
    assert problem.startswith("rl-on-gke:images.nemo-rl.digest: required")
    assert "nvcr.io/nvidia/nemo-rl:v0.4.0" in problem
    with pytest.raises(ValueError, match=r"images\.nemo-rl\.digest"):
        resolved_digests(("nemo-rl",), {})


def test_a_stack_digest_points_the_image_at_its_regional_remote_repository() -> None:
    used = used_images("nemo-rl", grafana=True)
    assert set(used) == {"nemo-rl", "kubectl", "grafana", "query-frontend"}
    given = dict.fromkeys(used, DIGEST_A)
    assert digest_problems(used, given) == []
    images = StackImages("proj-123", "us-east1", "rl-dev", resolved_digests(used, given))
    host = "us-east1-docker.pkg.dev/proj-123"
    assert images.ref("nemo-rl") == f"{host}/rl-dev-nvcr/nvidia/nemo-rl@{DIGEST_A}"
    assert images.ref("grafana") == f"{host}/rl-dev-docker-hub/grafana/grafana@{DIGEST_A}"
    assert images.ref("kubectl") == f"{host}/rl-dev-k8s/kubectl@{DIGEST_A}"
    assert (
        images.ref("query-frontend") == f"{host}/rl-dev-gke/prometheus-engine/frontend@{DIGEST_A}"
    )


def test_without_grafana_the_metrics_images_need_no_digest() -> None:
    assert used_images("verl", grafana=False) == ("verl", "kubectl")


@pytest.mark.parametrize("prefix", ["rl-dev", "a", "x" * 20])
def test_repository_names_gcp_accepts_pass(prefix: str) -> None:
    assert repository_problem(prefix) is None


@pytest.mark.parametrize("prefix", ["Rl-dev", "rl_dev", "9rl", "x" * 60])
def test_a_repository_name_gcp_would_refuse_is_refused_by_key(prefix: str) -> None:
    problem = repository_problem(prefix)
    assert problem is not None and problem.startswith(f"rl-on-gke:namePrefix = {prefix!r}")


def test_only_artifact_registry_and_docker_hub_images_by_digest_stream() -> None:
    ok = [
        f"us-east1-docker.pkg.dev/p/r/nvidia/nemo-rl@{DIGEST_A}",
        f"docker.io/verlai/verl@{DIGEST_A}",
    ]
    bad = [
        "nvcr.io/nvidia/nemo-rl:v0.4.0",
        f"nvcr.io/nvidia/nemo-rl@{DIGEST_A}",
        "us-east1-docker.pkg.dev/p/r/nvidia/nemo-rl:v0.4.0",
        "registry.k8s.io/kubectl:v1.35.0",
    ]
    assert unstreamable(ok + bad) == bad


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("cache", "projects/proj-123/global/images/cache"),
        ("global/images/cache", "projects/proj-123/global/images/cache"),
        ("projects/proj-123/global/images/cache", "projects/proj-123/global/images/cache"),
    ],
)
def test_a_disk_image_of_the_project_is_taken_whole(value: str, path: str) -> None:
    assert disk_image_problem(value, "proj-123") is None
    assert disk_image_path(value, "proj-123") == path


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("projects/other-proj/global/images/cache", "in project 'other-proj'"),
        ("projects/proj-123/regions/us-east1/images/cache", "no region or zone path"),
        ("projects/proj-123/zones/us-east1-b/disks/cache", "no region or zone path"),
        ("Cache_Image", "must be a disk image of this project"),
    ],
)
def test_a_disk_image_elsewhere_or_malformed_is_refused_by_key(value: str, says: str) -> None:
    problem = disk_image_problem(value, "proj-123")
    assert problem is not None
    assert problem.startswith(f"rl-on-gke:gpu.imageCacheDisk = {value!r}") and says in problem


def test_the_sandbox_image_must_be_an_artifact_registry_image_by_digest() -> None:
    key = "rewards.codeSandbox.image"
    assert own_image_problem(key, f"us-docker.pkg.dev/p/rl/code-sandbox@{DIGEST_A}") is None
    for value in ("us-docker.pkg.dev/p/rl/code-sandbox:1", f"ghcr.io/x/sandbox@{DIGEST_A}"):
        problem = own_image_problem(key, value)
        assert problem is not None and problem.startswith(f"rl-on-gke:{key} = {value!r}")
