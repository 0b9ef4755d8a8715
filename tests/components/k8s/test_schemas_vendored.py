"""The vendored CRD schemas are the upstream files at their tags, byte for byte.

Each file's SHA-256 in tests/schemas/SHA256SUMS was recorded after comparing it with its source
(README.md there names each and how it was compared): a file edited by hand, or replaced without
its digest, fails here.
"""

from __future__ import annotations

import hashlib

from tests.components.k8s.manifests import SCHEMAS_DIR


def _recorded() -> dict[str, str]:
    lines = (SCHEMAS_DIR / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in lines if line)}


def test_the_schemas_the_tests_use_are_in_the_repository() -> None:
    names = {p.relative_to(SCHEMAS_DIR).as_posix() for p in SCHEMAS_DIR.rglob("*.yaml")}
    assert names == {
        "kuberay-v1.7.0/ray.io_rayclusters.yaml",
        "gke-networking/networking.gke.io_networks.yaml",
        "gke-networking/networking.gke.io_gkenetworkparamsets.yaml",
        "gmp-v0.15.3/monitoring.googleapis.com_podmonitorings.yaml",
    }
    assert set(_recorded()) == names


def test_every_vendored_schema_is_the_upstream_file_it_was_copied_from() -> None:
    for name, digest in _recorded().items():
        content = (SCHEMAS_DIR / name).read_bytes()
        assert hashlib.sha256(content).hexdigest() == digest, name
