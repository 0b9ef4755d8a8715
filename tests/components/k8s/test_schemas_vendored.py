"""The vendored CRD schemas are the team's reference copies, byte for byte."""

from __future__ import annotations

import pytest

from tests.components.k8s.manifests import SCHEMAS_DIR, SHARED_SCHEMAS_DIR


def test_the_schemas_the_tests_use_are_in_the_repository() -> None:
    names = {p.relative_to(SCHEMAS_DIR).as_posix() for p in SCHEMAS_DIR.rglob("*.yaml")}
    assert names == {
        "kuberay-v1.7.0/ray.io_rayclusters.yaml",
        "gke-networking/networking.gke.io_networks.yaml",
        "gke-networking/networking.gke.io_gkenetworkparamsets.yaml",
    }


def test_vendored_schemas_equal_the_shared_reference_copies() -> None:
    if not SHARED_SCHEMAS_DIR.is_dir():
        pytest.skip(f"no reference copy at {SHARED_SCHEMAS_DIR} to compare with")
    for vendored in SCHEMAS_DIR.rglob("*.yaml"):
        reference = SHARED_SCHEMAS_DIR / vendored.relative_to(SCHEMAS_DIR)
        assert reference.read_bytes() == vendored.read_bytes(), vendored.name
