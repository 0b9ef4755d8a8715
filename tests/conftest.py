"""Shared fixtures: valid stack configs to start from, and the mock-runtime recorder."""

from __future__ import annotations

import copy
import hashlib
import runpy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from components.catalogue import IMAGES
from components.config import StackConfig, parse_stack_config, raw_config_from_pulumi

# No per-example deadline: a property holds or breaks whatever the machine's load, and a suite run
# beside another (or with the cores busy) must not fail on time alone.
settings.register_profile("rl-on-gke", deadline=None)
settings.load_profile("rl-on-gke")

# A valid config in the shape a stack file has (full Pulumi keys, camelCase values).
BASE_STACK_CONFIG: dict[str, Any] = {
    "gcp:project": "example-project",
    "gcp:region": "us-east1",
    "rl-on-gke:zone": "us-east1-b",
    "rl-on-gke:gpu": {"machineType": "a4-highgpu-8g", "nodeCount": 2, "provisioning": "spot"},
    "rl-on-gke:lustre": {
        "capacityGib": 9000,
        "perUnitStorageThroughput": 1000,
        "filesystem": "lustrefs",
        "protect": False,
    },
    "rl-on-gke:authorizedNetworks": [{"cidrBlock": "203.0.113.0/24", "displayName": "office"}],
    # The catalogue verifies no digest (components/catalogue.py IMAGES), so a stack gives them.
    # Test digests: the sha256 of a label, standing for no real image.
    "rl-on-gke:images": {
        name: {"digest": "sha256:" + hashlib.sha256(f"test image {name}".encode()).hexdigest()}
        for name in IMAGES
    },
}


def raw_from_stack(stack_config: dict[str, Any], name_prefix: str = "rl-test") -> dict[str, Any]:
    """Stack-file keys -> the raw mapping `parse_stack_config` takes, through the program's own
    reader (so the tests read exactly the keys the program reads)."""
    values = {"rl-on-gke:namePrefix": name_prefix, **stack_config}
    return raw_config_from_pulumi(lambda namespace, key: values.get(f"{namespace}:{key}"), "test")


@pytest.fixture
def stack_config() -> dict[str, Any]:
    """A fresh, mutable copy of a valid stack config."""
    return copy.deepcopy(BASE_STACK_CONFIG)


@pytest.fixture
def config(stack_config: dict[str, Any]) -> StackConfig:
    return parse_stack_config(raw_from_stack(stack_config))


# ------------------------------------------------------------------------- the slow seams

# Markers are set one way: explicitly, on the module (`pytestmark`) or the test. What can be seen
# from a test's fixtures is checked here, so a test that starts a real Ray cluster or a sandbox
# cannot slip into `make test-fast` unmarked.
_SEAM_FIXTURES = {"ray": {"ray_head", "ray_url", "ray_client", "gpu_node"}}
# Everything under tests/jobs/rewards/ runs the real compiler in real boxes.
_SEAM_FOLDERS = {"compiler": "tests/jobs/rewards/"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unmarked = []
    for item in items:
        own = {m.name for m in item.iter_markers()}
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in _SEAM_FIXTURES.items():
            if used & fixtures and marker not in own:
                unmarked.append(f"{item.nodeid}: uses {sorted(used & fixtures)}, mark it {marker}")
        for marker, folder in _SEAM_FOLDERS.items():
            if item.nodeid.startswith(folder) and marker not in own:
                unmarked.append(f"{item.nodeid}: runs in {folder}, mark it {marker}")
    if unmarked:
        raise pytest.UsageError("slow seams without their marker:\n" + "\n".join(unmarked))


# A whole-program rendering (tools.render.render runs `__main__.py` under the mock runtime) costs
# about a second and is the `plan` seam; a test that does one without the marker fails, naming it.
_PROGRAM = str(Path(__file__).resolve().parent.parent / "__main__.py")


@pytest.fixture(autouse=True)
def _whole_program_renders_are_marked_plan(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.node.get_closest_marker("plan") is not None:
        return
    run_path = runpy.run_path

    def refuse_the_program(path: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if str(path) == _PROGRAM:
            pytest.fail(
                f"{request.node.nodeid} renders the whole program (__main__.py): mark it plan",
                pytrace=False,
            )
        return run_path(path, *args, **kwargs)

    monkeypatch.setattr(runpy, "run_path", refuse_the_program)
